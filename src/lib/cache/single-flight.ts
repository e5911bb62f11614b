/**
 * In-process call coalescing: while a call for a key is running, later calls for that key get the
 * same promise instead of starting another one.
 */
export class SingleFlight<T> {
  private readonly flights = new Map<string, Promise<T>>();

  run(key: string, fn: () => Promise<T>): Promise<T> {
    const running = this.flights.get(key);
    if (running) return running;
    const flight = (async () => fn())().finally(() => {
      // forget() may have replaced or removed the entry meanwhile: remove only our own.
      if (this.flights.get(key) === flight) this.flights.delete(key);
    });
    this.flights.set(key, flight);
    return flight;
  }

  has(key: string): boolean {
    return this.flights.has(key);
  }

  /** Later calls start a new flight; callers already waiting keep the running one. */
  forget(key: string): void {
    this.flights.delete(key);
  }

  /** The flights running now. */
  running(): Array<Promise<T>> {
    return [...this.flights.values()];
  }

  get size(): number {
    return this.flights.size;
  }
}
