export { SmartBatcher, type DecideBatch, type SmartBatcherOptions } from './smart-batcher.js';
