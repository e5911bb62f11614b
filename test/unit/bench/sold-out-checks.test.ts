/**
 * The bench's "every unit sold" and "no false sold out" checks (bench/sale/sold-out-ledger.ts soldOutChecks):
 * they pass a correct sale, concurrent answers in any order included, and fail, each for its own
 * reason, a sale that said "sold out" while a unit was left, unless units came back.
 */
import { describe, expect, it } from 'vitest';
import { SoldOutLedger, soldOutChecks } from '../../../bench/sale/sold-out-ledger.js';

const verdicts = (checks: Array<{ name: string; pass: boolean }>) => Object.fromEntries(checks.map((check) => [check.name, check.pass]));

/** A voucher of 2 units: two buyers accepted, then "sold out" answers; times in ms. */
function soldOutSale(): SoldOutLedger {
  const ledger = new SoldOutLedger();
  ledger.answered('v', 'accepted', 0, 5);
  ledger.answered('v', 'sold-out', 1, 6);
  // Sent before the "sold out" arrived, answered after it: concurrent, the order of decisions unknown.
  ledger.answered('v', 'accepted', 2, 7);
  ledger.answered('v', 'sold-out', 8, 9);
  return ledger;
}

describe('sold-out checks', () => {
  it('pass a sale that sold every unit and refused only once none was left', () => {
    const checks = soldOutChecks(soldOutSale(), ['v'], 2, new Map([['v', 0]]));
    expect(verdicts(checks)).toEqual({ 'every unit sold': true, 'no false sold out': true });
  });

  it('fail "every unit sold" when a voucher that answered "sold out" still has units, unless they came back', () => {
    const left = new Map([['v', 1]]);
    expect(verdicts(soldOutChecks(soldOutSale(), ['v'], 3, left))).toEqual({ 'every unit sold': false, 'no false sold out': true });
    expect(soldOutChecks(soldOutSale(), ['v'], 3, left)[0]!.detail).toContain('v: 1 left');
    expect(verdicts(soldOutChecks(soldOutSale(), ['v'], 3, left, new Map([['v', 1]])))['every unit sold']).toBe(true);
  });

  it('fail "no false sold out" when an order sent after a "sold out" arrived is accepted, unless a unit came back', () => {
    const ledger = soldOutSale();
    ledger.answered('v', 'accepted', 10, 11); // sent at 10, after the first "sold out" arrived at 6
    const left = new Map([['v', 0]]);
    expect(verdicts(soldOutChecks(ledger, ['v'], 3, left))).toEqual({ 'every unit sold': true, 'no false sold out': false });
    expect(verdicts(soldOutChecks(ledger, ['v'], 3, left, new Map([['v', 1]])))['no false sold out']).toBe(true);
  });

  it('judge no voucher whose buyers never outnumbered its units', () => {
    const ledger = new SoldOutLedger();
    ledger.answered('w', 'accepted', 0, 1);
    ledger.answered('w', 'other', 0, 1); // e.g. a 429 or 503: no decision of the sale
    expect(verdicts(soldOutChecks(ledger, ['w', 'unoffered'], 5, new Map([['w', 4]])))).toEqual({ 'every unit sold': true, 'no false sold out': true });
  });
});
