export { RateLimit, RateLimiter, type RateLimitCheck, type RateLimitDecision, type RateLimiterOptions, type RateLimitRule } from './rate-limiter.js';
export { AdmissionLimiter, type AdmissionDecision, type AdmissionLimiterOptions } from './admission-limiter.js';
