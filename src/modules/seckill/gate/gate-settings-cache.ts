import type { Db } from '../../../infra/db.js';

/** What an order of a sale needs besides the login: nothing (hmdp), a purchase token, or a token behind a captcha. */
export const GATE_MODES = ['off', 'token', 'captcha'] as const;
export type GateMode = (typeof GATE_MODES)[number];

export interface GateSettings {
  mode: GateMode;
  /** The sale's captcha cost: its challenges draw their answer from 1..this (captcha-challenges.ts). */
  captchaMaxNumber: number;
  /** The sale's window, epoch ms. */
  begin: number;
  end: number;
}

/** Age after which an instance reloads its copy of a sale's gate settings (a PATCH reaches the others about this late). */
export const GATE_SETTINGS_TTL_MS = 1_000;
/** Bound of the settings memory (ids asked for that are no sale are remembered too). */
const MAX_CACHED_SALES = 10_000;

interface Cached {
  value: GateSettings | null;
  loadedAt: number;
  loading?: Promise<GateSettings | null>;
}

/**
 * Each sale's gate settings from MySQL, kept in memory: the order route asks on every request
 * and must not pay a query (nor a Redis command) for it. A copy older than GATE_SETTINGS_TTL_MS
 * is still answered while one load per sale refreshes it in the background; so while MySQL fails,
 * the last known settings hold (a gated sale stays gated) and no request waits for MySQL. Every
 * sale not yet ended is also loaded at once, at start and every GATE_SETTINGS_TTL_MS (`keepLoaded`),
 * so a sale is known before its first order: only a sale created while this instance could not
 * reach MySQL waits for its first load (the order path otherwise never needs MySQL).
 */
export class GateSettingsCache {
  private readonly cached = new Map<string, Cached>();

  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly load: (voucherId: string) => Promise<GateSettings | null>,
    private readonly now: () => number = Date.now,
    private readonly loadUnfinished?: (now: Date) => Promise<Map<string, GateSettings>>,
  ) {}

  static fromDatabase(db: Db, now?: () => number): GateSettingsCache {
    const toSettings = (row: { purchase_gate: string | null; captcha_max_number: number; begin_time: Date; end_time: Date }): GateSettings => ({
      mode: toGateMode(row.purchase_gate),
      captchaMaxNumber: row.captcha_max_number,
      begin: row.begin_time.getTime(),
      end: row.end_time.getTime(),
    });
    const columns = ['voucher_id', 'purchase_gate', 'captcha_max_number', 'begin_time', 'end_time'] as const;
    return new GateSettingsCache(
      async (voucherId) => {
        const row = await db.selectFrom('tb_seckill_voucher').select(columns).where('voucher_id', '=', voucherId).executeTakeFirst();
        return row ? toSettings(row) : null;
      },
      now,
      async (at) => {
        const rows = await db.selectFrom('tb_seckill_voucher').select(columns).where('end_time', '>', at).limit(MAX_CACHED_SALES).execute();
        return new Map(rows.map((row) => [row.voucher_id, toSettings(row)]));
      },
    );
  }

  /** Loads every sale not yet ended now and every GATE_SETTINGS_TTL_MS until `stop` (failures keep what is known). */
  keepLoaded(onError: (error: unknown) => void): void {
    if (!this.loadUnfinished || this.timer) return;
    let failing = false; // one log line per outage, not one a second
    const loadAll = (): void =>
      void this.loadAll().then(
        () => (failing = false),
        (error: unknown) => {
          if (!failing) onError(error);
          failing = true;
        },
      );
    loadAll();
    this.timer = setInterval(loadAll, GATE_SETTINGS_TTL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async loadAll(): Promise<void> {
    const loadedAt = this.now();
    const sales = await this.loadUnfinished!(new Date(loadedAt));
    if (this.cached.size + sales.size > MAX_CACHED_SALES) this.cached.clear();
    for (const [voucherId, value] of sales) {
      if (!this.cached.get(voucherId)?.loading) this.cached.set(voucherId, { value, loadedAt });
    }
  }

  async get(voucherId: string): Promise<GateSettings | null> {
    const entry = this.cached.get(voucherId);
    if (entry === undefined) return this.refresh(voucherId);
    if (entry.loadedAt < 0) return entry.loading ?? this.refresh(voucherId); // never loaded yet
    // While keepLoaded runs, its one query a period refreshes every sale: no query per sale.
    if (this.timer === undefined && this.now() - entry.loadedAt >= GATE_SETTINGS_TTL_MS && !entry.loading) {
      this.refresh(voucherId).catch(() => undefined); // kept as it is until a load succeeds
    }
    return entry.value;
  }

  /** This instance changed the sale: read it again on the next request. */
  forget(voucherId: string): void {
    this.cached.delete(voucherId);
  }

  private refresh(voucherId: string): Promise<GateSettings | null> {
    const known = this.cached.get(voucherId);
    const loading = this.load(voucherId).then(
      (value) => {
        if (this.cached.size >= MAX_CACHED_SALES) this.cached.clear();
        this.cached.set(voucherId, { value, loadedAt: this.now() });
        return value;
      },
      (error: unknown) => {
        if (known === undefined || known.loadedAt < 0) this.cached.delete(voucherId);
        else this.cached.set(voucherId, { value: known.value, loadedAt: known.loadedAt });
        throw error;
      },
    );
    this.cached.set(voucherId, { value: known?.value ?? null, loadedAt: known?.loadedAt ?? -1, loading });
    return loading;
  }
}

export const toGateMode = (value: string | null | undefined): GateMode => GATE_MODES.find((mode) => mode === value) ?? 'off';
