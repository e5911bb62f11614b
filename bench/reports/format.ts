/** Numbers as the reports print them. */
export const number = (value: number) => value.toLocaleString('en-US');
export const ratio = (value: number | undefined) => (value === undefined || !Number.isFinite(value) ? '–' : `${value.toFixed(2)}×`);
