export { Id, ID_PATTERN, Timestamp } from './wire-types.js';
