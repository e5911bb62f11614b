import type { ColumnType } from 'kysely';

/**
 * Row types of the tables in migrations/. BIGINT columns are `string`: mysql2 returns them as
 * decimal strings (see db.ts) and JSON carries them as strings. Small counters are numbers.
 */
type Id = string;
/** An id the database assigns (AUTO_INCREMENT): optional on insert, never updated. */
type AutoId = ColumnType<string, string | undefined, never>;
/** A column with a default: optional on insert. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
type CreateTime = ColumnType<Date, Date | undefined, never>;
type UpdateTime = ColumnType<Date, Date | undefined, Date | undefined>;

export interface UserTable {
  id: AutoId;
  phone: string;
  password: Defaulted<string>;
  nick_name: Defaulted<string>;
  icon: Defaulted<string>;
  role: Defaulted<UserRole>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

/** tb_user.role (migration 0004): administrators may write shops and vouchers. */
export type UserRole = 'user' | 'admin';

export interface UserInfoTable {
  user_id: Id;
  city: Defaulted<string>;
  introduce: Defaulted<string>;
  fans: Defaulted<number>;
  followee: Defaulted<number>;
  gender: Defaulted<number>;
  birthday: Defaulted<Date | null>;
  credits: Defaulted<number>;
  level: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface ShopTypeTable {
  id: AutoId;
  name: string;
  icon: Defaulted<string>;
  sort: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface ShopTable {
  id: AutoId;
  name: string;
  type_id: Id;
  images: Defaulted<string>;
  area: Defaulted<string>;
  address: string;
  x: number;
  y: number;
  avg_price: Defaulted<string>;
  sold: Defaulted<number>;
  comments: Defaulted<number>;
  score: Defaulted<number>;
  open_hours: Defaulted<string>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface BlogTable {
  id: AutoId;
  shop_id: Id;
  user_id: Id;
  title: string;
  images: Defaulted<string>;
  content: string;
  liked: Defaulted<number>;
  comments: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface BlogCommentsTable {
  id: AutoId;
  user_id: Id;
  blog_id: Id;
  parent_id: Defaulted<Id>;
  answer_id: Defaulted<Id>;
  content: string;
  liked: Defaulted<number>;
  status: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface FollowTable {
  id: AutoId;
  user_id: Id;
  follow_user_id: Id;
  create_time: CreateTime;
}

export interface VoucherTable {
  id: AutoId;
  shop_id: Id;
  title: string;
  sub_title: Defaulted<string>;
  rules: Defaulted<string>;
  /** fen (1/100 yuan) */
  pay_value: string;
  /** fen (1/100 yuan) */
  actual_value: string;
  type: Defaulted<number>;
  status: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface SeckillVoucherTable {
  voucher_id: Id;
  stock: number;
  /** Units offered, sold or not (migration 0006); NULL until first computed as stock + live orders. */
  total_stock: Defaulted<number | null>;
  /** Live orders one user may hold (migration 0007; 1 = hmdp's rule). */
  limit_per_user: Defaulted<number>;
  begin_time: Date;
  end_time: Date;
  /** 1 while an administrator pauses the sale (migration 0006). */
  paused: Defaulted<number>;
  /** off | token | captcha (migration 0008, src/modules/seckill/gate/purchase-gate.ts). */
  purchase_gate: Defaulted<string>;
  /** A captcha sale's cost, ALTCHA maxNumber (migration 0010, src/modules/seckill/gate/captcha-challenges.ts). */
  captcha_max_number: Defaulted<number>;
  /** Redis buckets the stock is sold from, 1..8 (migration 0011, docs/flows/seckill-buckets.md). */
  buckets: Defaulted<number>;
  create_time: CreateTime;
  update_time: UpdateTime;
}

export interface VoucherOrderTable {
  id: Id;
  user_id: Id;
  voucher_id: Id;
  pay_type: Defaulted<number>;
  status: Defaulted<number>;
  /** 1 while the order counts toward "one per user", null once cancelled or refunded. */
  live: Defaulted<number | null>;
  stock_released: Defaulted<number>;
  /** The user's slot 1..limit_per_user this order holds (migration 0007; unique with user, voucher, live). */
  slot: Defaulted<number>;
  create_time: CreateTime;
  pay_time: Defaulted<Date | null>;
  use_time: Defaulted<Date | null>;
  refund_time: Defaulted<Date | null>;
  update_time: UpdateTime;
}

export interface SignTable {
  id: AutoId;
  user_id: Id;
  year: number;
  month: number;
  date: Date;
  is_backup: Defaulted<number>;
}

export interface UploadTable {
  id: AutoId;
  user_id: Id;
  /** Path under the upload folder: /blogs/{d1}/{d2}/{uuid}.{ext} */
  name: string;
  size: number;
  /** The blog showing the image (migration 0005); NULL until one does, and swept if it stays so. */
  blog_id: Defaulted<Id | null>;
  create_time: CreateTime;
}

/** A change an administrator made to a live sale (migration 0006). */
export interface SeckillAuditTable {
  id: AutoId;
  voucher_id: Id;
  admin_id: Id;
  action: string;
  /** JSON of the sale before and after the change. */
  before_state: string;
  after_state: string;
  create_time: CreateTime;
}

export interface Database {
  tb_user: UserTable;
  tb_user_info: UserInfoTable;
  tb_shop_type: ShopTypeTable;
  tb_shop: ShopTable;
  tb_blog: BlogTable;
  tb_blog_comments: BlogCommentsTable;
  tb_follow: FollowTable;
  tb_voucher: VoucherTable;
  tb_seckill_voucher: SeckillVoucherTable;
  tb_voucher_order: VoucherOrderTable;
  tb_sign: SignTable;
  tb_upload: UploadTable;
  tb_seckill_audit: SeckillAuditTable;
}
