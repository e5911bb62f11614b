/** One promise of a sale or a fault run, judged: PASS or FAIL with what was seen. */
export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}
