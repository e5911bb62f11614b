import type { Migration, MigrationProvider } from 'kysely';
import * as initialSchema from './0001_initial_schema.js';
import * as orderLifecycle from './0002_order_lifecycle.js';
import * as uploads from './0003_uploads.js';
import * as userRole from './0004_user_role.js';
import * as uploadBlog from './0005_upload_blog.js';
import * as saleControls from './0006_sale_controls.js';
import * as limitPerUser from './0007_limit_per_user.js';
import * as purchaseGate from './0008_purchase_gate.js';
import * as orderAcceptTime from './0009_order_accept_time.js';
import * as captchaCost from './0010_captcha_cost.js';
import * as buckets from './0011_buckets.js';

/**
 * Migrations in order. Listed statically (not read from the directory) so they work the same
 * from src/ under tsx, from dist/ after a build, and in a bundle. Never edit a landed one:
 * add the next number.
 */
const MIGRATIONS: Record<string, Migration> = {
  '0001_initial_schema': initialSchema,
  '0002_order_lifecycle': orderLifecycle,
  '0003_uploads': uploads,
  '0004_user_role': userRole,
  '0005_upload_blog': uploadBlog,
  '0006_sale_controls': saleControls,
  '0007_limit_per_user': limitPerUser,
  '0008_purchase_gate': purchaseGate,
  '0009_order_accept_time': orderAcceptTime,
  '0010_captcha_cost': captchaCost,
  '0011_buckets': buckets,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
