import type { MessageFactory } from '../../../lib/messages/index.js';
import type { AdmissionLimiter, RateLimitCheck, RateLimitDecision, RateLimiter, RateLimitRule } from '../../../lib/rate-limit/index.js';
import { RateLimited } from '../errors/index.js';
import { LIMIT_NAMES } from '../keys.js';
import { SECKILL_MESSAGES } from '../messages.js';

export interface OrderLimitsOptions {
  /** Order requests per user per second (0: off). */
  perUser: number;
  /** Order requests per client IP per second (0: off). */
  perIp: number;
}

const MESSAGES: Record<string, MessageFactory<'seconds'>> = {
  [LIMIT_NAMES.perUser]: SECKILL_MESSAGES.tooManyFromAccount,
  [LIMIT_NAMES.perIp]: SECKILL_MESSAGES.tooManyFromAddress,
};

/**
 * The limits in front of POST /voucher-order/seckill/{id}, cheapest first:
 * 1. refusals this instance already knows of (a user or address over its limit): memory only;
 * 2. the sale's admission rate (src/lib/rate-limit AdmissionLimiter): memory, one lease per block;
 * 3. per user and per IP: nothing for a buyer's first request of a second (local burst), else a
 *    share of one script call that checks the requests arriving together (smart batching).
 * Any refusal is a 429 with Retry-After, before an order id is taken or the sale is touched.
 */
export class OrderLimits {
  private readonly userRule: RateLimitRule;
  private readonly ipRule: RateLimitRule;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly saleGate: AdmissionLimiter,
    options: OrderLimitsOptions,
  ) {
    // Local bursts (see RateLimitRule.localBurst): a buyer's first request of a second and an
    // address' first 5 % need no Redis command; with P instances the limits may be exceeded by
    // P requests per user and P × 5 % per address and second.
    this.userRule = { name: LIMIT_NAMES.perUser, limit: options.perUser, windowSeconds: 1, localBurst: 1 };
    this.ipRule = { name: LIMIT_NAMES.perIp, limit: options.perIp, windowSeconds: 1, localBurst: Math.max(1, Math.floor(options.perIp / 20)) };
  }

  async check(userId: string, clientIp: string, voucherId: string): Promise<void> {
    const checks: RateLimitCheck[] = [
      { rule: this.userRule, subject: userId },
      { rule: this.ipRule, subject: clientIp },
    ];
    refuseIfDenied(this.limiter.rememberedRefusal(checks));
    if (this.saleGate.enabled) {
      const admission = await this.saleGate.admit(voucherId);
      if (!admission.admitted) {
        throw new RateLimited(SECKILL_MESSAGES.tooManyBuyers, admission.retryAfterMs);
      }
    }
    refuseIfDenied(await this.limiter.consume(checks));
  }
}

function refuseIfDenied(decision: RateLimitDecision | null): void {
  if (decision === null || decision.allowed) return;
  throw new RateLimited(MESSAGES[decision.rule] ?? SECKILL_MESSAGES.tooManyRequests, decision.retryAfterMs);
}
