// Reading the Prometheus text format in tests: one sample by name and exact label set.

/** The value of the sample `name{labels}` (labels compared as a set), or undefined when there is none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map((x) => [x[1]!, x[2]!] as const)
      .sort(([a], [b]) => a.localeCompare(b));
    if (JSON.stringify(got) === JSON.stringify(want)) return Number(m[3]);
  }
  return undefined;
}
