import { maskPhone, type Log } from '../../infra/logging.js';

/** Delivers login codes. Swap in a real SMS gateway by implementing this interface. */
export interface SmsSender {
  sendLoginCode(phone: string, code: string): Promise<void>;
}

/**
 * Development sender: writes the code to the log instead of sending a text message. The phone is
 * masked (138****5678) like everywhere in the logs; its first three and last four digits still
 * tell whose code a line is.
 */
export class LogSmsSender implements SmsSender {
  constructor(private readonly log: Pick<Log, 'info'>) {}

  async sendLoginCode(phone: string, code: string): Promise<void> {
    const masked = maskPhone(phone);
    this.log.info({ phone: masked, code }, `login code for ${masked}: ${code}`);
  }
}
