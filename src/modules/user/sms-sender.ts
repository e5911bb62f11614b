import type { FastifyBaseLogger } from 'fastify';

/** Delivers login codes. Swap in a real SMS gateway by implementing this interface. */
export interface SmsSender {
  sendLoginCode(phone: string, code: string): Promise<void>;
}

/** Development sender: writes the code to the log instead of sending a text message. */
export class LogSmsSender implements SmsSender {
  constructor(private readonly log: Pick<FastifyBaseLogger, 'info'>) {}

  async sendLoginCode(phone: string, code: string): Promise<void> {
    this.log.info({ phone, code }, `login code for ${phone}: ${code}`);
  }
}
