import { ConfigError, renderSmsBody, type Config } from '../../infra/config.js';
import { maskPhone, type Log } from '../../infra/logging.js';

/** Delivers login codes. A rejected promise means the code did not reach the gateway: the caller withdraws it. */
export interface SmsSender {
  sendLoginCode(phone: string, code: string): Promise<void>;
}

/** Why a code was not delivered: the label of sms_send_failures_total. */
export type SmsFailureReason = 'timeout' | 'network' | 'status';

export class SmsDeliveryError extends Error {
  override name = 'SmsDeliveryError';

  constructor(
    readonly reason: SmsFailureReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Sends no text message. In development it writes the code to the log (phone masked, like
 * everywhere in the logs); anywhere else it only records that a code was issued: a code in a log
 * line lets whoever reads the logs log in as anyone.
 */
export class LogSmsSender implements SmsSender {
  constructor(
    private readonly log: Pick<Log, 'info'>,
    private readonly revealCodes: boolean,
  ) {}

  async sendLoginCode(phone: string, code: string): Promise<void> {
    const masked = maskPhone(phone);
    if (this.revealCodes) this.log.info({ phone: masked, code }, `login code for ${masked}: ${code}`);
    else this.log.info({ phone: masked }, `login code for ${masked} issued, not sent (SMS_SENDER=log; codes are logged only in development)`);
  }
}

export interface HttpSmsOptions {
  url: string;
  /** Header carrying `authToken` ('' or an empty token: no credential header). */
  authHeader: string;
  authToken: string;
  /** JSON body with {{phone}}, {{code}} and {{minutes}} (config.ts renderSmsBody). */
  bodyTemplate: string;
  timeoutMs: number;
  /** Lifetime of a code, for {{minutes}}. */
  codeTtlSeconds: number;
}

/**
 * A generic HTTP SMS gateway: one JSON POST per code. A 2xx answer within the timeout counts as
 * sent; anything else (non-2xx, timeout, connection failure, a redirect) is a SmsDeliveryError.
 * Neither the body nor the gateway's answer is logged: both may hold the code.
 */
export class HttpSmsSender implements SmsSender {
  private readonly headers: Record<string, string>;

  constructor(private readonly options: HttpSmsOptions) {
    this.headers = { 'content-type': 'application/json' };
    if (options.authHeader !== '' && options.authToken !== '') this.headers[options.authHeader.toLowerCase()] = options.authToken;
  }

  async sendLoginCode(phone: string, code: string): Promise<void> {
    const minutes = String(Math.max(1, Math.round(this.options.codeTtlSeconds / 60)));
    const body = renderSmsBody(this.options.bodyTemplate, { phone, code, minutes });
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: 'POST',
        headers: this.headers,
        body,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      const timedOut = err instanceof DOMException && (err.name === 'TimeoutError' || err.name === 'AbortError');
      if (timedOut) throw new SmsDeliveryError('timeout', `SMS gateway did not answer within ${this.options.timeoutMs} ms`);
      throw new SmsDeliveryError('network', `SMS gateway unreachable: ${(err as Error).message}`, { cause: err });
    }
    // The answer's body is not needed (and not logged); release the connection.
    await response.body?.cancel().catch(() => undefined);
    if (!response.ok) throw new SmsDeliveryError('status', `SMS gateway answered ${response.status}`);
  }
}

/**
 * The sender SMS_SENDER chooses. Unset, it is the log sender, except in production, which
 * refuses to start: a production deployment either has a gateway or says SMS_SENDER=log on purpose.
 */
export function createSmsSender(config: Pick<Config, 'nodeEnv' | 'sms' | 'auth'>, log: Pick<Log, 'info'>): SmsSender {
  const { sender, http } = config.sms;
  if (sender === 'http') {
    // A login code is a credential: in production it travels over TLS, or stays on this machine (a local relay).
    if (config.nodeEnv === 'production' && !encryptedOrLocal(http.url)) {
      throw new ConfigError(`SMS_HTTP_URL must be an https:// URL in production (or a loopback address): got ${new URL(http.url).origin}`);
    }
    return new HttpSmsSender({ ...http, codeTtlSeconds: config.auth.loginCodeTtlSeconds });
  }
  if (sender === undefined && config.nodeEnv === 'production') {
    throw new ConfigError(
      'SMS_SENDER is not set: in production set SMS_SENDER=http (an SMS gateway, with SMS_HTTP_URL) or SMS_SENDER=log explicitly (codes are then neither sent nor logged)',
    );
  }
  return new LogSmsSender(log, config.nodeEnv === 'development');
}

function encryptedOrLocal(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'https:' || ['localhost', '127.0.0.1', '[::1]'].includes(hostname);
}
