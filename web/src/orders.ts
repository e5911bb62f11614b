import type { OrderState } from './api';

/** Labels of the order states the server reports (GET /voucher-order/{id} and /voucher-order/of/me): one for each. */
export const STATE_LABEL: Record<OrderState, string> = {
  queued: '排队中',
  created: '已创建 · 待支付',
  paid: '已支付',
  used: '已使用',
  cancelled: '已取消',
  refunding: '退款中',
  refunded: '已退款',
};
