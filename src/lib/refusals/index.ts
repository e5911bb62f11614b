export {
  conflict,
  forbidden,
  invalid,
  notFound,
  rateLimited,
  Refusal,
  retryAfterSeconds,
  tooLarge,
  unauthenticated,
  unavailable,
  type RefusalKind,
} from './refusal.js';
