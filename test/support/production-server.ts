/**
 * The environment of `src/main.ts` started as production by a test: production refuses to start
 * without an explicit SMS sender and purchase-token keys, so a test names harmless ones.
 */
export const productionServerEnv = (logLevel: 'info' | 'warn'): NodeJS.ProcessEnv => ({
  ...process.env,
  NODE_ENV: 'production',
  LOG_LEVEL: logLevel,
  SMS_SENDER: 'log',
  PURCHASE_TOKEN_KEYS: 'test:0123456789abcdef0123456789abcdef',
});
