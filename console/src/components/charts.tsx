// Small SVG charts (no chart library): a live line chart and a stacked bar chart. Each has a text summary for
// screen readers (role="img" with a label) and a legend that shows the latest values.

interface Frame {
  W: number;
  H: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
  plotW: number;
  plotH: number;
}

/** The drawing area, with room on the left for the longest y-axis label (11px text, about 6.5px a character). */
function frame(W: number, H: number, labels: readonly string[]): Frame {
  const left = Math.max(34, 10 + 6.5 * Math.max(...labels.map((l) => l.length)));
  const f = { W, H, left, right: 10, top: 10, bottom: 24 };
  return { ...f, plotW: W - f.left - f.right, plotH: H - f.top - f.bottom };
}

/** 1, 2, 5 × 10^n at or above `v` (at least 1). */
function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export interface Series {
  name: string;
  points: ReadonlyArray<{ t: number; v: number | null }>;
}

export function LineChart({
  title,
  series,
  windowMs,
  now,
  format = (v) => String(Math.round(v * 100) / 100),
}: {
  title: string;
  series: readonly Series[];
  windowMs: number;
  now: number;
  format?: (v: number) => string;
}) {
  const t0 = now - windowMs;
  const values = series.flatMap((s) => s.points.map((p) => p.v).filter((v): v is number => v !== null));
  const max = niceMax(Math.max(0, ...values));
  const ticks = [0, 0.5, 1].map((f) => ({ v: max * f, label: format(max * f) }));
  const { W, H, left, right, top, plotW, plotH } = frame(
    400,
    170,
    ticks.map((t) => t.label),
  );
  const x = (t: number) => left + ((t - t0) / windowMs) * plotW;
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const latest = series.map((s) => {
    const last = [...s.points].reverse().find((p) => p.v !== null);
    return { name: s.name, value: last?.v ?? null };
  });
  const summary = `${title}: ${latest
    .map((l) => `${l.name} ${l.value === null ? 'no data' : format(l.value)}`)
    .join(', ')}`;
  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} preserveAspectRatio="xMidYMid meet">
        {ticks.map((t) => (
          <g key={t.v}>
            <line className="grid" x1={left} x2={W - right} y1={y(t.v)} y2={y(t.v)} />
            <text className="axis" x={left - 6} y={y(t.v) + 4} textAnchor="end">
              {t.label}
            </text>
          </g>
        ))}
        <text className="axis" x={left} y={H - 6}>
          −{windowMs >= 120_000 ? `${Math.round(windowMs / 60_000)} min` : `${Math.round(windowMs / 1000)} s`}
        </text>
        <text className="axis" x={W - right} y={H - 6} textAnchor="end">
          now
        </text>
        {series.map((s, i) => {
          // Gaps (null) split the line.
          const runs: string[][] = [[]];
          for (const p of s.points) {
            if (p.t < t0) continue;
            if (p.v === null) runs.push([]);
            else runs[runs.length - 1]!.push(`${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
          }
          return runs
            .filter((r) => r.length > 0)
            .map((r, j) =>
              r.length === 1 ? (
                <circle
                  key={`${i}-${j}`}
                  className={`series series-${i}`}
                  cx={r[0]!.split(',')[0]}
                  cy={r[0]!.split(',')[1]}
                  r={3}
                />
              ) : (
                <polyline key={`${i}-${j}`} className={`series series-${i}`} points={r.join(' ')} fill="none" />
              ),
            );
        })}
      </svg>
      <ul className="legend">
        {latest.map((l, i) => (
          <li key={l.name}>
            <span className={`swatch swatch-${i}`} aria-hidden="true" />
            {l.name}: <strong>{l.value === null ? '—' : format(l.value)}</strong>
          </li>
        ))}
      </ul>
    </figure>
  );
}

export interface Bar {
  label: string;
  parts: ReadonlyArray<{ group: string; value: number }>;
}

export function BarChart({
  title,
  bars,
  groups,
  format = (v) => v.toFixed(2),
}: {
  title: string;
  bars: readonly Bar[];
  groups: readonly string[];
  format?: (v: number) => string;
}) {
  const totals = bars.map((b) => b.parts.reduce((a, p) => a + p.value, 0));
  const max = niceMax(Math.max(0, ...totals));
  const ticks = [0, 0.5, 1].map((f) => ({ v: max * f, label: format(max * f) }));
  const { W, H, left, right, top, plotW, plotH } = frame(
    900,
    220,
    ticks.map((t) => t.label),
  );
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const slot = bars.length > 0 ? plotW / bars.length : plotW;
  const barW = Math.max(2, Math.min(48, slot * 0.7));
  const every = Math.max(1, Math.ceil(bars.length / 8));
  const total = totals.reduce((a, v) => a + v, 0);
  const summary = `${title}: ${bars.length} periods, ${format(total)} in all`;
  return (
    <figure className="chart chart-wide">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        {ticks.map((t) => (
          <g key={t.v}>
            <line className="grid" x1={left} x2={W - right} y1={y(t.v)} y2={y(t.v)} />
            <text className="axis" x={left - 6} y={y(t.v) + 4} textAnchor="end">
              {t.label}
            </text>
          </g>
        ))}
        {bars.map((b, i) => {
          let base = 0;
          const cx = left + slot * i + slot / 2;
          return (
            <g key={b.label}>
              {b.parts.map((p) => {
                const g = groups.indexOf(p.group);
                const top = y(base + p.value);
                const height = y(base) - top;
                base += p.value;
                return (
                  <rect
                    key={p.group}
                    className={`bar series-${g < 0 ? 0 : g % 6}`}
                    x={cx - barW / 2}
                    y={top}
                    width={barW}
                    height={Math.max(0, height)}
                  >
                    <title>{`${b.label} · ${p.group}: ${format(p.value)}`}</title>
                  </rect>
                );
              })}
              {i % every === 0 ? (
                <text className="axis" x={cx} y={H - 6} textAnchor="middle">
                  {b.label}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      {groups.length > 1 ? (
        <ul className="legend">
          {groups.map((g, i) => (
            <li key={g}>
              <span className={`swatch swatch-${i % 6}`} aria-hidden="true" />
              {g}
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  );
}
