/**
 * A page's generated part: `generated` (which starts with `begin` and ends with `end`) in place of
 * the text between those markers, or appended when the page has none yet; the hand-written text
 * around the markers stays.
 */
export function replaceGenerated(page: string, begin: string, end: string, generated: string): string {
  const start = page.indexOf(begin);
  const stop = page.indexOf(end);
  return start >= 0 && stop > start ? page.slice(0, start) + generated + page.slice(stop + end.length) : `${page.trimEnd()}\n\n${generated}\n`;
}
