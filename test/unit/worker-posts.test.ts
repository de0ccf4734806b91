// What a worker's job-done and job-stream bodies become (src/engine/worker-posts.ts): members as the worker wrote
// them, stream chunks of at most 1 MB measured without Python's white space, and bounded work and storage for
// whatever a body holds.

import { describe, expect, it } from 'vitest';

import { LIMITS } from '../../src/domain/index.ts';
import { classifyDone, streamChunks } from '../../src/engine/worker-posts.ts';

const bytes = (s: string): number => Buffer.byteLength(s);

describe('classifyDone', () => {
  it('keeps the output and error as written, and reads status and stopPod', () => {
    expect(classifyDone('{"output": {"seed": 18446744073709551615, "x": 1.0}, "stopPod": true}')).toEqual({
      kind: 'final',
      result: {
        status: 'COMPLETED',
        outputJson: '{"seed": 18446744073709551615, "x": 1.0}',
        errorJson: null,
        stopPod: true,
      },
    });
    expect(classifyDone('{"error": "boom", "output": null}')).toMatchObject({
      result: { status: 'FAILED', errorJson: '"boom"', outputJson: 'null' },
    });
    expect(classifyDone('{"status": "IN_PROGRESS", "output": {"p": 0.50}}')).toEqual({
      kind: 'progress',
      outputJson: '{"p": 0.50}',
    });
  });
});

describe('streamChunks', () => {
  it("a Python chunk under 1 MB once its separators' white space is left out is one chunk, stored compact", () => {
    const items = Array.from({ length: 400_000 }, (_, i) => i % 10);
    const python = `{"output": [${items.join(', ')}]}`; // json.dumps: ", " between items
    expect(bytes(python)).toBeGreaterThan(LIMITS.streamChunkBytes);
    const [chunk, ...more] = streamChunks(python);
    expect(more).toEqual([]);
    expect(chunk).toBe(`{"output":[${items.join(',')}]}`);
  });

  it('a large string output is split under the limit, each piece with the other members, in order', () => {
    const text = 'héllo wörld '.repeat(200_000);
    const chunks = streamChunks(JSON.stringify({ meta: { n: 1.0 }, output: text }).replace('"n":1', '"n":1.0'));
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) {
      expect(bytes(c)).toBeLessThanOrEqual(LIMITS.streamChunkBytes);
      expect(c.startsWith('{"meta":{"n":1.0},"output":"')).toBe(true);
    }
    expect(chunks.map((c) => (JSON.parse(c) as { output: string }).output).join('')).toBe(text);
    // Stored about once: the pieces are sized by the text's real bytes, not the worst case of escaping.
    expect(chunks.reduce((sum, c) => sum + bytes(c), 0)).toBeLessThan(1.1 * bytes(JSON.stringify(text)));
  });

  it('control characters (6 bytes each escaped) after plain text still give pieces under the limit', () => {
    const text = 'a'.repeat(1_500_000) + '\u0001'.repeat(400_000);
    const chunks = streamChunks(JSON.stringify({ output: text }));
    for (const c of chunks) expect(bytes(c)).toBeLessThanOrEqual(LIMITS.streamChunkBytes);
    expect(chunks.map((c) => (JSON.parse(c) as { output: string }).output).join('')).toBe(text);
  });

  it('refuses a body whose other members fill half a chunk or more (each piece would carry them): 413', () => {
    const body = JSON.stringify({ meta: 'm'.repeat(LIMITS.streamChunkBytes / 2), output: 'o'.repeat(600_000) });
    expect(() => streamChunks(body)).toThrow(expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }));
  });

  it('carries every other member of a body with many of them into each piece (32,000 members, 1.1 MB output)', () => {
    // Read in one pass: a scan per member made this take over 30 s (past the test's time limit).
    const members = Array.from({ length: 32_000 }, (_, i) => `"k${i}":0`).join(',');
    const chunks = streamChunks(`{${members},"output":"${'x'.repeat(1_100_000)}"}`);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(Object.keys(JSON.parse(c) as object)).toHaveLength(32_001);
  });
});
