/** Figures to two decimals, as the hot-voucher tables print them. */
export const round2 = (value: number) => Math.round(value * 100) / 100;
