/**
 * The server has no "my orders" list endpoint yet (only GET /api/voucher-order/{id}), so the
 * orders placed in this browser are remembered here, per user, and their state is read live.
 */
export interface PlacedOrder { id: string; voucherId: string; title: string; shopName: string; placedAt: number }

const key = (userId: string) => `hmdp.orders.${userId}`;

export function placedOrders(userId: string): PlacedOrder[] {
  try {
    return JSON.parse(localStorage.getItem(key(userId)) ?? '[]') as PlacedOrder[];
  } catch {
    return [];
  }
}

export function rememberOrder(userId: string, order: PlacedOrder): void {
  const list = placedOrders(userId).filter((o) => o.id !== order.id);
  list.unshift(order);
  localStorage.setItem(key(userId), JSON.stringify(list.slice(0, 50)));
}

export const STATE_LABEL: Record<string, string> = {
  queued: '排队中', created: '已创建 · 待支付', paid: '已支付', used: '已使用',
  cancelled: '已取消', refunding: '退款中', refunded: '已退款',
};
