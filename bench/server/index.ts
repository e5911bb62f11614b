/**
 * The bench server's door, for the bench process (the server itself is main.ts, compiled and run
 * in a process of its own: harness/compiled-server.ts): the semaphore key that its gulimall route
 * and the `seckill-semaphore` scenario share.
 */
export { stockSemaphore } from './gulimall-seckill.js';
