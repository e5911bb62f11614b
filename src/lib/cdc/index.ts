export { BinlogFiles } from './binlog-files.js';
export { BinlogReader, type BinlogReaderOptions } from './binlog-reader.js';
export { ChangeFollower, FencedError, type ChangeFollowerOptions, type FollowerObserver, type FollowerRole, type GapReason } from './change-follower.js';
export { PositionStore, type BinlogPosition, type SavedPosition } from './position-store.js';
export type { CommittedTransaction, RedisClient, RowChange } from './types.js';
