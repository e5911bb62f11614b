import { ConfigError, type Config } from '../../../infra/config.js';

/** Used only until PURCHASE_TOKEN_KEYS is set; production refuses to start with it. */
const DEVELOPMENT_TOKEN_KEY = { kid: 'dev', secret: 'hmdp-development-purchase-token-key-not-a-secret' };

/** PURCHASE_TOKEN_KEYS, or outside production a fixed key that every development instance shares. */
export function purchaseTokenKeys(config: Pick<Config, 'purchaseGate' | 'nodeEnv'>): Array<{ kid: string; secret: string }> {
  if (config.purchaseGate.tokenKeys.length > 0) return config.purchaseGate.tokenKeys;
  if (config.nodeEnv === 'production') {
    throw new ConfigError('PURCHASE_TOKEN_KEYS is not set: production needs its own purchase token keys (kid:secret, e.g. k1:$(openssl rand -hex 32))');
  }
  return [DEVELOPMENT_TOKEN_KEY];
}
