/**
 * Demo data: hmdp's ten shop types, 60 shops spread over Hangzhou (the city hmdp's front end
 * centres on, x=120.149993 y=30.334229), demo users and vouchers, one of them a seckill voucher
 * on sale now. Ids are fixed so loading twice changes nothing. `npm run seed` adds the demo
 * content (src/cli/demo-content.ts): 60 branches near the default point (every type's list there spans
 * pages of 5), shop pictures, seckill vouchers in the other states, blogs, likes and follows.
 */

export const SHOP_TYPES = [
  { id: '1', name: '美食', icon: '/types/ms.png', sort: 1 },
  { id: '2', name: 'KTV', icon: '/types/KTV.png', sort: 2 },
  { id: '3', name: '丽人·美发', icon: '/types/lrmf.png', sort: 3 },
  { id: '4', name: '健身运动', icon: '/types/jsyd.png', sort: 10 },
  { id: '5', name: '按摩·足疗', icon: '/types/amzl.png', sort: 5 },
  { id: '6', name: '美容SPA', icon: '/types/spa.png', sort: 6 },
  { id: '7', name: '亲子游乐', icon: '/types/qzyl.png', sort: 7 },
  { id: '8', name: '酒吧', icon: '/types/jiuba.png', sort: 8 },
  { id: '9', name: '轰趴馆', icon: '/types/hpg.png', sort: 9 },
  { id: '10', name: '美睫·美甲', icon: '/types/mjmj.png', sort: 4 },
];

/** Shopping areas of Hangzhou with their approximate centre (longitude x, latitude y). */
const AREAS = [
  { area: '运河上街', street: '台州路', x: 120.1505, y: 30.3331 },
  { area: '拱宸桥', street: '丽水路', x: 120.142, y: 30.3185 },
  { area: '远洋乐堤港', street: '小河路', x: 120.1433, y: 30.3215 },
  { area: '大关', street: '上塘路', x: 120.1512, y: 30.309 },
  { area: '北城天地', street: '石祥路', x: 120.1398, y: 30.3398 },
  { area: '武林广场', street: '延安路', x: 120.164, y: 30.2745 },
  { area: '西湖文化广场', street: '中山北路', x: 120.1665, y: 30.281 },
  { area: '湖滨', street: '平海路', x: 120.1658, y: 30.258 },
  { area: '黄龙', street: '曙光路', x: 120.14, y: 30.27 },
  { area: '文三路', street: '文三路', x: 120.1295, y: 30.279 },
  { area: '城西银泰', street: '丰潭路', x: 120.0935, y: 30.2995 },
  { area: '钱江新城', street: '富春路', x: 120.216, y: 30.2505 },
];

/** The areas within ~3 km of the default point, where the branches open. */
const NEAR_AREAS = AREAS.slice(0, 5);

/** Shop pictures, generated at seed time (demo-images.ts): `/imgs/shops/{typeId}-{n}.png`, n < SHOP_IMAGES_PER_TYPE. */
export const SHOP_IMAGES_PER_TYPE = 3;
export const shopImageName = (typeId: string, n: number): string => `/shops/${typeId}-${n}.png`;

const BRANDS: Record<string, string[]> = {
  '1': ['103茶餐厅', '新白鹿餐厅', '海底捞火锅', '外婆家', '绿茶餐厅', '炉鱼'],
  '2': ['开乐迪KTV', 'INLOVE KTV', '星聚会KTV', '讴K拉量贩KTV', '魅KTV', '纯K'],
  '3': ['永琪美容美发', '审美造型', '文峰美发', '东田造型', '千色店', '木北造型'],
  '4': ['乐刻运动', '威尔士健身', '一兆韦德', '超级猩猩', '金仕堡健身', '舒适堡'],
  '5': ['华夏良子', '富侨足浴', '元和堂', '宏济堂', '君临足道', '足馨阁'],
  '6': ['思妍丽', '美丽田园', '克丽缇娜', '自然美', '奈瑞儿', '伊美尔'],
  '7': ['小神童乐园', '奈尔宝家庭中心', '淘气堡', '卡通尼乐园', '悠游堂', '森林动物城'],
  '8': ['胡桃里音乐酒馆', '苏荷酒吧', 'Mamala', '贝尔酒吧', '慢摇吧', '精酿工坊'],
  '9': ['星期八轰趴馆', '聚点轰趴', '米趴轰趴馆', '趴趴屋', '一起轰趴', '青橙轰趴'],
  '10': ['小甲美甲', '指爱美甲', '美睫坊', '睫时美学', '甲色美甲', '初见美睫'],
};

const AVERAGE_PRICE: Record<string, number> = {
  '1': 80,
  '2': 120,
  '3': 150,
  '4': 60,
  '5': 160,
  '6': 300,
  '7': 90,
  '8': 180,
  '9': 100,
  '10': 130,
};

/** Deterministic pseudo-random numbers (mulberry32), so every load makes the same shops. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface DemoShop {
  id: string;
  name: string;
  type_id: string;
  images: string;
  area: string;
  address: string;
  x: number;
  y: number;
  avg_price: string;
  sold: number;
  comments: number;
  score: number;
  open_hours: string;
}

/** The 60 shops loaded by loadDemoData (without pictures: the seed's demo content adds them). */
export function demoShops(): DemoShop[] {
  return allShops()
    .slice(0, 60)
    .map((shop) => ({ ...shop, images: '' }));
}

/** Ids 61..120: a branch of each brand near the default point, in an area it is not in yet (demo content). */
export function demoBranches(): DemoShop[] {
  return allShops().slice(60);
}

/** Every demo shop's pictures: `/imgs/shops/{typeId}-{n}.png`, full paths as hmdp's shop images are full URLs. */
export function demoShopImages(): Map<string, string> {
  return new Map(allShops().map((shop) => [shop.id, shop.images]));
}

function allShops(): DemoShop[] {
  const random = seededRandom(20_240_101);
  const shops: DemoShop[] = [];
  const names = new Set<string>();
  const add = (type: (typeof SHOP_TYPES)[number], brand: string, place: (typeof AREAS)[number]) => {
    const id = shops.length + 1;
    names.add(`${brand}(${place.area}店)`);
    shops.push({
      id: String(id),
      name: `${brand}(${place.area}店)`,
      type_id: type.id,
      images: [0, 1, 2].map((k) => `/imgs${shopImageName(type.id, (id + k) % SHOP_IMAGES_PER_TYPE)}`).join(','),
      area: place.area,
      address: `${place.street}${10 + Math.floor(random() * 490)}号`,
      // Up to ~600 m from the area's centre, rounded like a map pin (6 decimals).
      x: round6(place.x + (random() - 0.5) * 0.012),
      y: round6(place.y + (random() - 0.5) * 0.01),
      avg_price: String(Math.round(AVERAGE_PRICE[type.id]! * (0.6 + random() * 0.8))),
      sold: Math.floor(random() * 5000),
      comments: Math.floor(random() * 3000),
      score: 30 + Math.floor(random() * 21),
      open_hours: type.id === '8' ? '19:00-02:00' : '10:00-22:00',
    });
  };
  for (const type of SHOP_TYPES) {
    BRANDS[type.id]!.forEach((brand, index) => add(type, brand, AREAS[(Number(type.id) * 7 + index * 5) % AREAS.length]!));
  }
  for (const type of SHOP_TYPES) {
    BRANDS[type.id]!.forEach((brand, index) => {
      const start = Number(type.id) + index;
      const offset = [0, 1, 2, 3, 4].find((k) => !names.has(`${brand}(${NEAR_AREAS[(start + k) % NEAR_AREAS.length]!.area}店)`)) ?? 0;
      add(type, brand, NEAR_AREAS[(start + offset) % NEAR_AREAS.length]!);
    });
  }
  return shops;
}

const round6 = (value: number): number => Math.round(value * 1e6) / 1e6;

export const DEMO_USERS = [
  { id: '1', phone: '13686869696', nick_name: '小鱼同学', icon: '' },
  { id: '2', phone: '13838411438', nick_name: '可可今天不吃肉', icon: '' },
  { id: '3', phone: '13456789011', nick_name: '杭州吃货', icon: '' },
  { id: '4', phone: '13456789001', nick_name: '运河边的猫', icon: '' },
  { id: '5', phone: '13456762069', nick_name: '周末去哪儿', icon: '' },
];

/** The demo seckill voucher: sale open from an hour before the first load, for a year. */
export const DEMO_SECKILL_VOUCHER_ID = '2';

/** Seckill vouchers in the other states, relative to the first load: upcoming (in 30 days), sold out (stock 0, on sale), ended (yesterday). */
export const DEMO_SECKILL_STATES = { open: DEMO_SECKILL_VOUCHER_ID, upcoming: '4', soldOut: '5', ended: '6' } as const;

export function demoVouchers(now: Date) {
  const hour = 3600_000;
  return {
    vouchers: [
      {
        id: '1',
        shop_id: '1',
        title: '50元代金券',
        sub_title: '周一至周日均可使用',
        rules: '全场通用\n无需预约\n可无限叠加\n不兑现、不找零\n仅限堂食',
        pay_value: '4750',
        actual_value: '5000',
        type: 0,
        status: 1,
      },
      {
        id: DEMO_SECKILL_VOUCHER_ID,
        shop_id: '1',
        title: '100元代金券',
        sub_title: '限时秒杀，每人限购一张',
        rules: '全场通用\n无需预约\n不兑现、不找零\n仅限堂食',
        pay_value: '8000',
        actual_value: '10000',
        type: 1,
        status: 1,
      },
      {
        id: '3',
        shop_id: '2',
        title: '双人套餐代金券',
        sub_title: '周末节假日通用',
        rules: '需提前一天预约\n仅限堂食',
        pay_value: '9900',
        actual_value: '15000',
        type: 0,
        status: 1,
      },
    ],
    seckill: [
      { voucher_id: DEMO_SECKILL_VOUCHER_ID, stock: 100, begin_time: new Date(now.getTime() - hour), end_time: new Date(now.getTime() + 365 * 24 * hour) },
    ],
  };
}

/** Seckill vouchers on branches (demo content), in the states other than on sale. */
export function demoSaleStates(now: Date) {
  const day = 24 * 3600_000;
  return {
    vouchers: [
      seckillVoucher(DEMO_SECKILL_STATES.upcoming, '61', '200元代金券', '下月开抢，每人限购一张', '20000', '30000'),
      seckillVoucher(DEMO_SECKILL_STATES.soldOut, '62', '88元欢唱券', '已抢光', '8800', '20000'),
      seckillVoucher(DEMO_SECKILL_STATES.ended, '63', '1元体验券', '活动已结束', '100', '5000'),
    ],
    seckill: [
      { voucher_id: DEMO_SECKILL_STATES.upcoming, stock: 50, begin_time: new Date(now.getTime() + 30 * day), end_time: new Date(now.getTime() + 60 * day) },
      { voucher_id: DEMO_SECKILL_STATES.soldOut, stock: 0, begin_time: new Date(now.getTime() - day), end_time: new Date(now.getTime() + 30 * day) },
      { voucher_id: DEMO_SECKILL_STATES.ended, stock: 20, begin_time: new Date(now.getTime() - 8 * day), end_time: new Date(now.getTime() - day) },
    ],
  };
}

function seckillVoucher(id: string, shopId: string, title: string, subTitle: string, payValue: string, actualValue: string) {
  return {
    id,
    shop_id: shopId,
    title,
    sub_title: subTitle,
    rules: '全场通用\n无需预约\n不兑现、不找零',
    pay_value: payValue,
    actual_value: actualValue,
    type: 1,
    status: 1,
  };
}
