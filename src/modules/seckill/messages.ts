import { defineMessages, render } from '../../lib/messages/index.js';

/** What the seckill module tells users, in both languages (src/lib/messages); hmdp's wording where it had one. */
export const SECKILL_MESSAGES = defineMessages('seckill', {
  notStarted: { en: 'The sale has not started yet', zh: '秒杀尚未开始！' },
  ended: { en: 'The sale has ended', zh: '秒杀已经结束！' },
  soldOut: { en: 'Sold out', zh: '库存不足！' },
  alreadyBought: { en: 'You already have an order for this voucher', zh: '不允许重复下单！' },
  /** A voucher whose limit per user is above 1 (1: alreadyBought, hmdp's message). */
  atLimit: { en: 'You already hold {limit} orders of this voucher', zh: '每人限购 {limit} 张，您已达到上限' },
  idempotencyKeyReused: {
    en: 'This Idempotency-Key was already used for voucher {voucherId}: send a new key for each order (a retry of the same order reuses its key)',
    zh: '该 Idempotency-Key 已用于优惠券 {voucherId}：每个订单请使用新的 key（重试同一订单时沿用原 key）',
  },
  badIdempotencyKey: {
    en: 'headers.idempotency-key must be 1 to 64 visible ASCII characters (letters, digits, punctuation; no spaces)',
    zh: 'headers.idempotency-key 应为 1 到 64 个可见 ASCII 字符（字母、数字、标点；不含空格）',
  },
  busy: { en: 'Your previous order request is still being processed', zh: '之前的下单请求还在处理中，请勿重复下单' },
  /** A reconciliation repair froze the sale for a moment. */
  frozen: { en: 'Sale is being checked, please retry', zh: '秒杀正在核对中，请稍后重试' },
  /** An administrator paused the sale (`suspended` in Redis). */
  suspended: { en: 'The sale is paused by the organiser, please retry later', zh: '秒杀已被主办方暂停，请稍后再试' },
  unknownVoucher: { en: 'Voucher {id} is not a seckill voucher', zh: '秒杀券不存在！（{id}）' },
  outcomeUnknown: {
    en: 'The outcome of this order is unknown ({dependency} did not answer): it may have been placed as order {orderId}. Check GET /api/voucher-order/{orderId} or GET /api/voucher-order/of/me/voucher/{voucherId} before ordering again',
    zh: '下单结果未知（{dependency} 没有应答）：订单可能已创建，订单号 {orderId}。再次下单前请先查询 GET /api/voucher-order/{orderId} 或 GET /api/voucher-order/of/me/voucher/{voucherId}',
  },
  /** The request deadline passed before an order id was issued: the request may still place one. */
  orderDeadline: {
    en: 'The outcome of this order is unknown (no answer in time): check GET /api/voucher-order/of/me/voucher/{voucherId} before ordering again',
    zh: '下单结果未知（未能及时应答）：再次下单前请先查询 GET /api/voucher-order/of/me/voucher/{voucherId}',
  },
  /** The request deadline passed after the order id was issued: outcomeUnknown's answer, without the dependency. */
  orderDeadlineWithId: {
    en: 'The outcome of this order is unknown (no answer in time): it may have been placed as order {orderId}. Check GET /api/voucher-order/{orderId} or GET /api/voucher-order/of/me/voucher/{voucherId} before ordering again',
    zh: '下单结果未知（未能及时应答）：订单可能已创建，订单号 {orderId}。再次下单前请先查询 GET /api/voucher-order/{orderId} 或 GET /api/voucher-order/of/me/voucher/{voucherId}',
  },
  orderNotFound: { en: 'Order {orderId} not found', zh: '订单 {orderId} 不存在' },
  noOrderForVoucher: { en: 'You have no order for voucher {voucherId}', zh: '您没有优惠券 {voucherId} 的订单' },
  orderProcessing: { en: 'The order is still being processed; try again in a moment', zh: '订单还在处理中，请稍后再试' },
  orderNotPayable: { en: 'The order is {state} and cannot be paid', zh: '订单状态为 {state}，不能支付' },
  saleChangeBusy: {
    en: 'Another change of this sale is in progress (a change or a reconciliation repair); retry in a moment',
    zh: '该秒杀正在进行另一项修改（修改或对账修复），请稍后重试',
  },
  stockBelowSold: {
    en: 'body.stock: {sold} units are sold or queued; the stock cannot go below that (orders may still be arriving: read it again)',
    zh: 'body.stock：已售出或排队中的有 {sold} 件，库存不能低于此数（订单可能仍在到达：请重新读取）',
  },
  endBeforeBegin: { en: 'body.endTime must be after body.beginTime', zh: 'body.endTime 必须晚于 body.beginTime' },
  /** A PATCH of one bound of the window that crosses the other, stored one. */
  beginAfterSaleEnd: {
    en: "body.beginTime must be before the sale's end, {end} (send endTime too to move both)",
    zh: 'body.beginTime 必须早于秒杀的结束时间 {end}（如需同时移动，请一并给出 endTime）',
  },
  endBeforeSaleBegin: {
    en: "body.endTime must be after the sale's begin, {begin} (send beginTime too to move both)",
    zh: 'body.endTime 必须晚于秒杀的开始时间 {begin}（如需同时移动，请一并给出 beginTime）',
  },
  endInPast: { en: 'body.endTime must be in the future', zh: 'body.endTime 必须是将来的时间' },
  shopMissing: { en: 'body.shopId: shop {shopId} does not exist', zh: 'body.shopId：店铺 {shopId} 不存在' },
  payOverActual: { en: 'body.payValue must not exceed body.actualValue', zh: 'body.payValue 不能大于 body.actualValue' },
  tooManyBuyers: {
    en: 'Too many people are buying this voucher right now: try again in {seconds} s',
    zh: '当前抢购人数过多，请 {seconds} 秒后再试',
  },
  tooManyFromAccount: { en: 'Too many order requests from your account: try again in {seconds} s', zh: '您的账号下单过于频繁，请 {seconds} 秒后再试' },
  tooManyFromAddress: { en: 'Too many order requests from this address: try again in {seconds} s', zh: '该地址下单过于频繁，请 {seconds} 秒后再试' },
  tooManyRequests: { en: 'Too many requests: try again in {seconds} s', zh: '请求过于频繁，请 {seconds} 秒后再试' },
  // Schema field texts (errorMessage of the route schemas).
  stockRange: { en: 'must be a whole number from 0 to {max}', zh: '应为 0 到 {max} 之间的整数' },
  limitPerUserRange: { en: 'must be a whole number from 1 to {max}', zh: '应为 1 到 {max} 之间的整数' },
  bucketsRange: { en: 'must be a whole number from 1 to {max}', zh: '应为 1 到 {max} 之间的整数' },
  captchaMaxNumberRange: {
    en: 'must be a whole number from {min} (less costs a script too little) to {max} (more takes a phone too long)',
    zh: '应为 {min} 到 {max} 之间的整数（更小则脚本几乎无需付出代价，更大则手机求解过久）',
  },
  wholeFen: { en: 'must be a whole number of fen from 0', zh: '应为不小于 0 的整数（单位：分）' },
  giveOneSetting: { en: 'must hold at least one of {settings}', zh: '至少要给出以下设置之一：{settings}' },
  voucherTypeOfRoute: {
    en: 'must be {type} here: the route decides the type (0 POST /api/voucher, 1 POST /api/voucher/seckill)',
    zh: '此处只能是 {type}：类型由接口决定（POST /api/voucher 为 0，POST /api/voucher/seckill 为 1）',
  },
  newVoucherStatus: { en: 'must be 1 (on sale, as every new voucher is) or null', zh: '只能是 1（上架，新券均为上架）或 null' },
  setByServer: { en: 'is set by the server: leave it out (or null)', zh: '由服务器设置：请不要给出（或给 null）' },
  badGateMode: { en: 'must be off, token or captcha', zh: '只能是 off、token 或 captcha' },
  // The purchase gate (purchase-gate.ts) and order event streams (order-event-routes.ts).
  gateNoCaptcha: { en: "Voucher {voucherId}'s sale needs no captcha", zh: '秒杀券 {voucherId} 无需验证码' },
  gateOpensIn: { en: 'The sale opens in {seconds} s (at {at}): ask again then', zh: '秒杀将在 {seconds} 秒后开始（{at}），届时再来领取' },
  gateSaleEnded: { en: 'The sale has ended', zh: '秒杀已经结束！' },
  gateTokenMissing: {
    en: 'This sale needs a purchase token: POST /api/voucher-order/seckill/{voucherId}/token, then send it as X-Purchase-Token',
    zh: '该秒杀需要购买令牌：先 POST /api/voucher-order/seckill/{voucherId}/token，再以 X-Purchase-Token 请求头发送',
  },
  gateTokenMalformed: { en: 'The purchase token is malformed', zh: '购买令牌格式错误' },
  gateTokenUnknownKey: {
    en: 'The purchase token was signed with a key this server does not know (get a new one)',
    zh: '购买令牌的签名密钥未知，请重新领取',
  },
  gateTokenForged: { en: 'The purchase token is forged or damaged', zh: '购买令牌无效（伪造或已损坏）' },
  gateTokenExpired: { en: 'The purchase token has expired: get a new one', zh: '购买令牌已过期，请重新领取' },
  gateTokenOtherUser: { en: 'The purchase token belongs to another user', zh: '购买令牌属于其他用户' },
  gateTokenTakenWhileOff: {
    en: 'The purchase token was taken while the sale asked for no token: get a new one',
    zh: '购买令牌是在该秒杀无需令牌时领取的，请重新领取',
  },
  gateTokenTakenBeforeCaptcha: {
    en: 'The purchase token was taken before the sale asked for a captcha: get a new one',
    zh: '购买令牌是在该秒杀要求验证码之前领取的，请重新领取',
  },
  gateTokenSpent: { en: 'The purchase token bought an order already: get a new one', zh: '该购买令牌已用于下单，请重新领取' },
  gateTokenOtherVoucher: { en: 'The purchase token is for another voucher ({voucherId})', zh: '购买令牌属于另一张券（{voucherId}）' },
  gateCaptchaMissing: {
    en: 'This sale needs a captcha: GET /api/voucher-order/seckill/{voucherId}/captcha (an ALTCHA proof-of-work challenge), solve it, then send the ALTCHA payload as body.captcha',
    zh: '该秒杀需要验证码：先 GET /api/voucher-order/seckill/{voucherId}/captcha（ALTCHA 工作量证明挑战），解出后在 body.captcha 中提交 ALTCHA 载荷',
  },
  gateCaptchaMalformed: {
    en: 'The captcha answer is malformed: send the ALTCHA payload (base64 JSON of the challenge and its solution)',
    zh: '验证码答案格式错误：请提交 ALTCHA 载荷（挑战及其解答的 JSON，base64 编码）',
  },
  gateCaptchaForged: { en: 'The captcha challenge was not issued by this server: get a new one', zh: '验证码挑战不是本服务器签发的，请重新获取' },
  gateCaptchaOtherUser: { en: 'The captcha challenge was issued to another user: get a new one', zh: '验证码挑战属于其他用户，请重新获取' },
  gateCaptchaOtherVoucher: { en: 'The captcha challenge was issued for another voucher: get a new one', zh: '验证码挑战属于另一张券，请重新获取' },
  gateCaptchaExpired: { en: 'The captcha challenge has expired: get a new one', zh: '验证码挑战已过期，请重新获取' },
  gateCaptchaWrong: { en: 'The captcha answer does not solve its challenge', zh: '验证码答案不正确' },
  gateCaptchaUsed: { en: 'The captcha challenge was used already: get a new one', zh: '验证码挑战已被使用，请重新获取' },
  gateTooManyRequests: { en: 'Too many purchase token requests: try again in {seconds} s', zh: '领取令牌过于频繁，请 {seconds} 秒后再试' },
  tooManyOrderStreams: {
    en: 'You have {streams} order streams open already: close one first',
    zh: '你已打开 {streams} 个订单状态推送，请先关闭一个',
  },
  bucketsRefilling: {
    en: "This sale's units are moving between its buckets; retry in a moment",
    zh: '该秒杀的库存正在各分桶之间调配，请稍后重试',
  },
  bucketsFixed: {
    en: 'body.buckets can change only until {until} (10 s before the sale begins); the sale begins at {begin}',
    zh: 'body.buckets 只能在 {until}（开售前 10 秒）之前修改；开售时间 {begin}',
  },
  bucketsAfterSales: {
    en: 'body.buckets: units of this sale are sold or queued; its buckets stay as they are',
    zh: 'body.buckets：该秒杀已有售出或排队中的订单，分桶不能再改',
  },
  bucketsAlone: { en: 'body.buckets is changed alone: send the other settings in another request', zh: 'body.buckets 需单独修改：其他设置请另行提交' },
  bucketsOff: {
    en: 'body.buckets: this deployment sells each voucher from at most {most} bucket(s) (SECKILL_MAX_BUCKETS)',
    zh: 'body.buckets：本部署每张券最多分 {most} 个桶销售（SECKILL_MAX_BUCKETS）',
  },
  orderEventsUnavailable: { en: 'Order events are unavailable right now: poll the order instead', zh: '订单状态推送暂不可用，请改为查询订单' },
});

/** The refusals' English texts, as tests and the bench compare them (clients get their language's). */
export const REFUSALS = {
  notStarted: SECKILL_MESSAGES.notStarted.texts.en,
  ended: SECKILL_MESSAGES.ended.texts.en,
  soldOut: SECKILL_MESSAGES.soldOut.texts.en,
  alreadyBought: SECKILL_MESSAGES.alreadyBought.texts.en,
  /** A voucher whose limit per user is above 1 (1: alreadyBought, hmdp's message). */
  atLimit: (limit: number) => render(SECKILL_MESSAGES.atLimit({ limit }), 'en'),
  idempotencyKeyReused: (voucherId: string) => render(SECKILL_MESSAGES.idempotencyKeyReused({ voucherId }), 'en'),
  busy: SECKILL_MESSAGES.busy.texts.en,
  frozen: SECKILL_MESSAGES.frozen.texts.en,
  suspended: SECKILL_MESSAGES.suspended.texts.en,
  unknownVoucher: (id: string) => render(SECKILL_MESSAGES.unknownVoucher({ id }), 'en'),
} as const;
