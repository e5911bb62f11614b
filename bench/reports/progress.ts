/**
 * What the run is doing, on stderr (stdout carries the report): on a terminal one line redrawn
 * with a bar per timed phase, elsewhere (CI logs) one line per phase.
 */
import type { Ticker } from '../harness/index.js';

const BAR_WIDTH = 24;

export class Progress {
  private readonly live: boolean;
  private label = '';
  private readonly started = performance.now();

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly quiet = false,
  ) {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-conversion -- @types/node says boolean, but isTTY is undefined on a stream that is not a terminal
    this.live = Boolean(stream.isTTY);
  }

  /** Starts a step; `seconds` is its planned length when it is timed. */
  step(label: string, seconds?: number): Ticker {
    if (this.quiet) return () => {};
    this.finishLine();
    this.label = label;
    const suffix = seconds === undefined ? '' : ` (${seconds} s)`;
    if (this.live) this.draw(seconds === undefined ? '…' : bar(0, seconds));
    else this.stream.write(`[${this.clock()}] ${label}${suffix}\n`);
    return (elapsed: number) => {
      if (this.live && seconds !== undefined) this.draw(bar(elapsed, seconds));
    };
  }

  done(): void {
    this.finishLine();
  }

  private draw(state: string): void {
    this.stream.write(`\r\x1b[2K[${this.clock()}] ${this.label} ${state}`);
  }

  private finishLine(): void {
    if (this.live && this.label !== '') this.stream.write('\n');
    this.label = '';
  }

  private clock(): string {
    const seconds = Math.floor((performance.now() - this.started) / 1000);
    return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
  }
}

function bar(elapsed: number, total: number): string {
  const fraction = Math.min(1, Math.max(0, elapsed / total));
  const filled = Math.round(fraction * BAR_WIDTH);
  return `[${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}] ${Math.min(elapsed, total).toFixed(1)}/${total} s`;
}
