import { randomUUID } from 'node:crypto';
import type { Log } from '../../infra/logging.js';
import type { RedisClient } from '../../infra/redis.js';
import { UPLOAD_SWEEP_KEY } from './keys.js';
import type { UploadRepository } from './upload-repository.js';
import type { UploadService } from './upload-service.js';

export interface UploadSweeperOptions {
  /** Images no blog shows this long after their upload are deleted. */
  unattachedTtlSeconds: number;
  /** Time between runs; 0: never runs by itself. */
  intervalSeconds: number;
  onSwept?(count: number): void;
  now?: () => number;
}

/** Records per query; a run goes on until none is left. */
const BATCH = 100;
/** Temporary files of an upload older than this were left by a crash (an upload takes at most HTTP_REQUEST_TIMEOUT_MS). */
const STALE_TEMP_MS = 3600_000;

/**
 * Deletes uploaded images that no blog shows UPLOAD_UNATTACHED_TTL_SECONDS after their upload.
 * Every instance runs the timer; the one that claims `upload:sweep` (SET NX PX, expiring just
 * before the next run) sweeps that interval, the others skip. Two sweeps at once would still be
 * safe: each record is deleted only if still unattached (one DELETE … WHERE blog_id IS NULL, which
 * a blog's attach cannot interleave with), and only the deleter removes the file.
 */
export class UploadSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly instance = randomUUID();
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisClient,
    private readonly uploads: UploadRepository,
    private readonly files: UploadService,
    private readonly log: Pick<Log, 'warn'>,
    private readonly options: UploadSweeperOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.options.intervalSeconds <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runIfClaimed()
        .catch((err: unknown) => this.log.warn({ err }, 'upload sweep failed'))
        .finally(() => (this.running = undefined));
    }, this.options.intervalSeconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Sweeps if this instance claims the interval; returns the images deleted, or null when another instance has it. */
  async runIfClaimed(): Promise<number | null> {
    const claimMs = Math.max(1000, this.options.intervalSeconds * 1000 - 1000);
    const claimed = await this.redis.set(UPLOAD_SWEEP_KEY, this.instance, 'PX', claimMs, 'NX');
    if (claimed !== 'OK') return null;
    return this.sweep();
  }

  /** Deletes every image unattached for longer than the TTL (record, then file) and stale temporary files. */
  async sweep(): Promise<number> {
    const cutoff = new Date(this.now() - this.options.unattachedTtlSeconds * 1000);
    let swept = 0;
    for (;;) {
      const names = await this.uploads.unattachedBefore(cutoff, BATCH);
      for (const name of names) {
        if (!(await this.uploads.deleteUnattached(name))) continue; // attached meanwhile, or another sweeper's
        await this.files.removeImageFile(name);
        swept += 1;
      }
      if (names.length < BATCH) break;
    }
    await this.files.removeStaleTempFiles(this.now() - STALE_TEMP_MS);
    if (swept > 0) this.options.onSwept?.(swept);
    return swept;
  }
}
