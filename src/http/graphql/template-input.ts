/**
 * GraphQL `SaveTemplateInput` → the domain template, and the domain template → GraphQL `PodTemplate`.
 * Like saveEndpoint, saving with an id replaces the template: optional fields left out return to their defaults,
 * except `imageName`, `isServerless` and `category`, which are kept. Pod-only options (startSsh, startJupyter,
 * startScript, advancedStart, config, portsConfig) have no effect on serverless workers; they are kept and read back.
 */
import { TEMPLATE_DEFAULTS, type Template, type TemplateInput } from '../../domain/index.ts';
import { invalid } from './context.ts';
import {
  commandToDockerArgs,
  dockerArgsToCommand,
  envFromList,
  envToList,
  intIn,
  portsFromString,
  reparsed,
  sameList,
  type EnvPair,
} from './convert.ts';

export interface GqlTemplateInput {
  id?: string | null;
  name: string;
  imageName?: string | null;
  dockerArgs: string;
  containerDiskInGb: number;
  volumeInGb: number;
  volumeMountPath?: string | null;
  ports?: string | null;
  env: ReadonlyArray<EnvPair | null>;
  isServerless?: boolean | null;
  isPublic?: boolean | null;
  containerRegistryAuthId?: string | null;
  readme?: string | null;
  category?: 'CPU' | 'GPU' | 'NVIDIA' | 'AMD' | null;
  startSsh?: boolean | null;
  startJupyter?: boolean | null;
  startScript?: string | null;
  advancedStart?: boolean | null;
  config?: unknown;
  portsConfig?: ReadonlyArray<{ port: string; name: string } | null> | null;
}

/** Every field of the template; `imageName`, `isServerless` and `category` are undefined when left out. */
export function templateFields(input: GqlTemplateInput): Partial<TemplateInput> & { name: string } {
  const name = input.name.trim();
  if (name === '' || name.length > 191) throw invalid('name', 'must have 1 to 191 characters');
  const imageName = input.imageName?.trim();
  if (imageName !== undefined && (imageName === '' || imageName.length > 1024)) {
    throw invalid('imageName', 'must have 1 to 1024 characters');
  }
  const out: Partial<TemplateInput> & { name: string } = {
    name,
    ...dockerArgsToCommand('dockerArgs', input.dockerArgs),
    dockerArgs: input.dockerArgs ?? '',
    containerDiskInGb: intIn('containerDiskInGb', input.containerDiskInGb, 0, 10_000),
    volumeInGb: intIn('volumeInGb', input.volumeInGb, 0, 10_000),
    volumeMountPath: input.volumeMountPath?.trim() || TEMPLATE_DEFAULTS.volumeMountPath,
    ports: portsFromString('ports', input.ports),
    env: envFromList('env', input.env),
    isPublic: input.isPublic ?? false,
    containerRegistryAuthId: input.containerRegistryAuthId?.trim() || null,
    readme: input.readme ?? '',
    // Like the other optional fields, left out is the default (a save replaces the template).
    podOptions: {
      startSsh: input.startSsh ?? false,
      startJupyter: input.startJupyter ?? false,
      startScript: input.startScript ?? null,
      advancedStart: input.advancedStart ?? false,
      config: input.config ?? null,
      portsConfig: (input.portsConfig ?? []).flatMap((p) => (p ? [{ port: p.port, name: p.name }] : [])),
    },
  };
  if (imageName !== undefined) out.imageName = imageName;
  if (input.isServerless !== undefined && input.isServerless !== null) out.isServerless = input.isServerless;
  if (input.category) out.category = input.category === 'GPU' ? 'NVIDIA' : input.category;
  return out;
}

/**
 * `dockerArgs` as last saved while it still gives the template's command (a REST change of dockerStartCmd or
 * dockerEntrypoint since makes it rebuilt); a command line, which leaves the entrypoint as it is, only while the
 * template has none, so that a client saving back what it read keeps it. A kept text that no longer parses is rebuilt.
 */
export function dockerArgsOf(t: Template): string {
  if (t.dockerArgs !== undefined) {
    const text = t.dockerArgs;
    const command = reparsed(() => dockerArgsToCommand('dockerArgs', text));
    if (
      command &&
      sameList(command.dockerStartCmd, t.dockerStartCmd) &&
      sameList(command.dockerEntrypoint ?? [], t.dockerEntrypoint)
    ) {
      return t.dockerArgs;
    }
  }
  return commandToDockerArgs(t);
}

/** The GraphQL view of a template (`PodTemplate`). */
export function podTemplateView(t: Template) {
  return {
    id: t.id,
    name: t.name,
    imageName: t.imageName,
    dockerArgs: dockerArgsOf(t),
    containerDiskInGb: t.containerDiskInGb,
    volumeInGb: t.volumeInGb,
    volumeMountPath: t.volumeMountPath,
    ports: t.ports.join(','),
    portsConfig: t.podOptions?.portsConfig ?? [],
    env: envToList(t.env),
    isServerless: t.isServerless,
    isPublic: t.isPublic,
    isRunpod: false,
    containerRegistryAuthId: t.containerRegistryAuthId,
    readme: t.readme,
    startJupyter: t.podOptions?.startJupyter ?? false,
    startSsh: t.podOptions?.startSsh ?? false,
    startScript: t.podOptions?.startScript ?? null,
    advancedStart: t.podOptions?.advancedStart ?? false,
    config: t.podOptions?.config ?? null,
    category: t.category,
    userId: t.userId,
    boundEndpointId: t.boundEndpointId ?? null,
    earned: 0,
    runtimeInMin: 0,
  };
}
