import { describe, expect, it } from 'vitest';
import {
  DATA_CENTER_IDS,
  ENDPOINT_DEFAULTS,
  TEMPLATE_DEFAULTS,
  type Endpoint,
  type Template,
} from '../../src/domain/index.ts';
import {
  commandToDockerArgs,
  countryOf,
  dataCentersToLocations,
  dockerArgsToCommand,
  joinArgs,
  locationsToDataCenters,
  portsFromString,
  splitArgs,
} from '../../src/http/graphql/convert.ts';
import { allowedCudaVersionsOf, locationsOf } from '../../src/http/graphql/resolvers/endpoints.ts';
import { buildWharfSchema } from '../../src/http/graphql/schema.ts';
import { dockerArgsOf } from '../../src/http/graphql/template-input.ts';

describe('dockerArgs ↔ argv', () => {
  it('splits like a shell for words and quotes', () => {
    expect(splitArgs('f', '')).toEqual([]);
    expect(splitArgs('f', '  python  -u handler.py ')).toEqual(['python', '-u', 'handler.py']);
    expect(splitArgs('f', `a "b c" 'd "e"' f\\ g "h\\"i" ""`)).toEqual(['a', 'b c', 'd "e"', 'f g', 'h"i', '']);
    expect(() => splitArgs('dockerArgs', 'a "b')).toThrow(/dockerArgs has an unterminated quote/);
  });

  it('joins so that splitting gives the same argv back', () => {
    for (const argv of [[], ['python', '-u', 'x.py'], ['a b', 'c"d', "e'f", 'g\\h', '', '--x=1']]) {
      expect(splitArgs('f', joinArgs(argv))).toEqual(argv);
    }
    expect(joinArgs(['node', 'worker.ts', 'hello world'])).toBe('node worker.ts "hello world"');
  });

  it("reads runpodctl's JSON form (cmd and entrypoint) and writes it back when there is an entrypoint", () => {
    const json = '{"cmd":["python handler.py"],"entrypoint":["/bin/sh","-c"]}';
    expect(dockerArgsToCommand('dockerArgs', json)).toEqual({
      dockerStartCmd: ['python handler.py'],
      dockerEntrypoint: ['/bin/sh', '-c'],
    });
    expect(dockerArgsToCommand('dockerArgs', '{"cmd":["a"]}')).toEqual({ dockerStartCmd: ['a'] });
    // Not JSON: a command line that happens to start with a brace.
    expect(dockerArgsToCommand('dockerArgs', '{a,b} c')).toEqual({ dockerStartCmd: ['{a,b}', 'c'] });
    expect(() => dockerArgsToCommand('dockerArgs', '{"cmd":"python"}')).toThrow(/dockerArgs as JSON must be/);
    expect(() => dockerArgsToCommand('dockerArgs', '{"args":[]}')).toThrow(/dockerArgs as JSON must be/);
    // Round trips: the command line without an entrypoint, the JSON form with one.
    for (const t of [
      { dockerStartCmd: ['python', '-u', 'x.py'], dockerEntrypoint: [] },
      { dockerStartCmd: ['python handler.py'], dockerEntrypoint: ['/bin/sh', '-c'] },
      { dockerStartCmd: [], dockerEntrypoint: ['/start.sh'] },
    ]) {
      const back = dockerArgsToCommand('dockerArgs', commandToDockerArgs(t));
      expect({ dockerEntrypoint: [], ...back }).toEqual(t);
    }
    expect(commandToDockerArgs({ dockerStartCmd: ['node', 'w.ts'], dockerEntrypoint: [] })).toBe('node w.ts');
  });
});

describe('locations ↔ data centers', () => {
  it('knows the country of every data center', () => {
    expect(DATA_CENTER_IDS.map(countryOf).every((c) => /^[A-Z]{2}$/.test(c))).toBe(true);
    expect([countryOf('US-TX-3'), countryOf('EU-RO-1'), countryOf('EUR-IS-1'), countryOf('CA-MTL-1')]).toEqual([
      'US',
      'RO',
      'IS',
      'CA',
    ]);
  });

  it('expands country codes, keeps data center ids, and reads countries back', () => {
    const us = locationsToDataCenters('locations', 'us');
    expect(us.length).toBeGreaterThan(5);
    expect(us.every((dc) => dc.startsWith('US-'))).toBe(true);
    expect(dataCentersToLocations(us)).toBe('US');
    expect(dataCentersToLocations(locationsToDataCenters('l', 'US-TX-3, EU-RO-1'))).toBe('US-TX-3,RO');
    expect(locationsToDataCenters('l', '')).toEqual([]);
    expect(dataCentersToLocations([])).toBeNull();
    expect(dataCentersToLocations([...DATA_CENTER_IDS])).toBeNull();
    expect(() => locationsToDataCenters('locations', 'GB')).toThrow(/locations entry 'GB'/);
  });
});

describe('ports', () => {
  it('parses the comma string', () => {
    expect(portsFromString('p', '8888/http, 22/tcp,')).toEqual(['8888/http', '22/tcp']);
    expect(() => portsFromString('ports', '8888/udp')).toThrow(/ports entry '8888\/udp'/);
  });
});

describe('schema', () => {
  it('builds with every resolver attached to a field of the SDL', () => {
    const schema = buildWharfSchema();
    expect(schema.getMutationType()?.getFields()['saveEndpoint']?.resolve).toBeTypeOf('function');
  });
});

describe('client text kept as sent reads back derived once it no longer parses', () => {
  // gqlLocations, gqlAllowedCudaVersions and a template's dockerArgs are parsed again on every read; a text a later
  // release no longer accepts (a data center or CUDA version dropped, a stricter parser) must not fail the read of
  // the endpoint or template (myself { endpoints }, podTemplates) for good.
  const endpoint = (over: Partial<Endpoint>): Endpoint => ({
    ...ENDPOINT_DEFAULTS,
    dataCenterIds: ['EU-RO-1'],
    allowedCudaVersions: ['12.4'],
    id: 'epstaletext001',
    userId: 'u1',
    templateId: 't1',
    version: 1,
    createdAt: 0,
    ...over,
  });

  it('locations and allowedCudaVersions', () => {
    const e = endpoint({ gqlLocations: 'EU-XX-9,EU-RO-1', gqlAllowedCudaVersions: '10.2,12.4' });
    expect(locationsOf(e)).toBe(dataCentersToLocations(['EU-RO-1']));
    expect(allowedCudaVersionsOf(e)).toBe('12.4');
    // Still valid: read back as sent.
    const sent = endpoint({ gqlLocations: 'eu-ro-1', gqlAllowedCudaVersions: '12.4' });
    expect([locationsOf(sent), allowedCudaVersionsOf(sent)]).toEqual(['eu-ro-1', '12.4']);
  });

  it('dockerArgs', () => {
    const t: Template = {
      ...TEMPLATE_DEFAULTS,
      id: 't1',
      userId: 'u1',
      name: 'x',
      imageName: 'img:1',
      createdAt: 0,
      dockerStartCmd: ['python', '-u', 'h.py'],
      dockerArgs: `python -u 'h.py`,
    };
    expect(dockerArgsOf(t)).toBe('python -u h.py');
    expect(dockerArgsOf({ ...t, dockerArgs: `python  -u 'h.py'` })).toBe(`python  -u 'h.py'`);
  });
});
