/** Holds callers at `pass()` while closed; tests use it to look at the world while a load is in progress. */
export class Gate {
  private closed: Promise<void> | undefined;
  private release: (() => void) | undefined;

  close(): void {
    this.closed = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release?.();
    this.closed = undefined;
  }

  /** Resolves at once when open, else when opened. */
  async pass(): Promise<void> {
    if (this.closed) await this.closed;
  }
}
