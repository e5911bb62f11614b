import { reactive } from 'vue';

export interface Toast {
  id: number;
  kind: 'error' | 'info';
  text: string;
}

/** Messages shown at the top of every page for a few seconds (see App.vue). */
export const toasts = reactive<Toast[]>([]);
let next = 1;

export function toast(text: string, kind: Toast['kind'] = 'info', ms = 4000): void {
  const item = { id: next++, kind, text };
  toasts.push(item);
  setTimeout(() => {
    const index = toasts.findIndex((t) => t.id === item.id);
    if (index >= 0) toasts.splice(index, 1);
  }, ms);
}

export const toastError = (text: string): void => toast(text, 'error', 6000);
