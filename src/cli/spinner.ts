import type { Colors, Sink } from './output.ts';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * A one-line progress indicator on stderr while the CLI waits on a job or a scale-up: the frame, what is happening
 * (status, queue reason) and the time waited. Drawn only on a terminal; elsewhere (pipes, CI, tests) it writes
 * nothing at all, so logs never fill with carriage returns.
 */
export class Spinner {
  private timer: ReturnType<typeof setInterval> | null = null;
  private text = '';
  private frame = 0;
  private startedAt = 0;
  private readonly sink: Sink;
  private readonly c: Colors;
  private readonly now: () => number;
  readonly enabled: boolean;

  constructor(sink: Sink, c: Colors, opts: { enabled?: boolean; now?: () => number } = {}) {
    this.sink = sink;
    this.c = c;
    this.enabled = opts.enabled ?? sink.isTTY === true;
    this.now = opts.now ?? Date.now;
  }

  start(text: string): void {
    this.text = text;
    this.startedAt = this.now();
    if (!this.enabled || this.timer) return;
    this.render();
    this.timer = setInterval(() => this.render(), 80);
    // A spinner alone must never keep the process alive.
    this.timer.unref();
  }

  update(text: string): void {
    this.text = text;
    if (this.timer) this.render();
  }

  /** Clear the line; `final` (if any) is printed in its place, e.g. "✓ COMPLETED in 2.1 s". */
  stop(final?: string): void {
    if (this.timer) {
      clearInterval(this.timer);
      this.timer = null;
      this.sink.write('\r\x1b[2K');
    }
    if (final !== undefined && this.enabled) this.sink.write(`${final}\n`);
  }

  /** The line as drawn (exposed for tests). */
  line(): string {
    const secs = Math.floor((this.now() - this.startedAt) / 1000);
    return `${this.c.cyan(FRAMES[this.frame % FRAMES.length]!)} ${this.text} ${this.c.dim(`${secs}s`)}`;
  }

  private render(): void {
    this.frame++;
    this.sink.write(`\r\x1b[2K${this.line()}`);
  }
}
