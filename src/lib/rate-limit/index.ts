export { RateLimit, RateLimiter, type RateLimitCheck, type RateLimitDecision, type RateLimiterOptions, type RateLimitRule } from './rate-limiter.js';
export { AdmissionGate, type AdmissionDecision, type AdmissionGateOptions } from './admission-gate.js';
