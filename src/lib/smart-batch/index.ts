export { SmartBatcher, type DecideBatch, type SmartBatcherOptions } from './smart-batcher.js';
export { slotLanes } from './slot-lanes.js';
