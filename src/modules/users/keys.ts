import { hash } from 'node:crypto';

/**
 * Every Redis key of login and sessions (hmdp's `login:code:` and `login:token:` families):
 *
 *   login:code:{phone}              hash {code, attempts}, TTL LOGIN_CODE_TTL_SECONDS
 *   login:token:{sha256(token)}     hash {id, nickName, icon, role, deadline}, sliding TTL SESSION_TTL_SECONDS
 *                                   up to deadline (login + SESSION_MAX_AGE_SECONDS)
 *   login:sessions:{userId}         set of a user's session digests, TTL SESSION_MAX_AGE_SECONDS from the latest login (see SessionStore)
 *
 * Keys the rate limiter derives from the rule names below: `rl:{name}:{phone or ip}`.
 */

export const codeKey = (phone: string): string => `login:code:${phone}`;

/** Sessions are keyed by a digest of the token: whoever reads Redis still cannot use one. */
// crypto.hash, one call without a Hash object: about a third cheaper, and every signed-in request pays it.
export const tokenDigest = (token: string): string => hash('sha256', token, 'hex');
export const sessionKeyOfDigest = (digest: string): string => `login:token:${digest}`;
export const sessionKey = (token: string): string => sessionKeyOfDigest(tokenDigest(token));

/** The set of a user's session digests. */
export const userSessionsKey = (userId: string): string => `login:sessions:${userId}`;

export const SMS_LIMIT_NAMES = { phoneInterval: 'sms:phone:interval', phoneDaily: 'sms:phone:daily', ipHourly: 'sms:ip:hourly' } as const;
