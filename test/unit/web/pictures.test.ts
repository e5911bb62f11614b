import { describe, expect, it } from 'vitest';
import { pictureNames, pictureUrl } from '../../../web/src/pictures.js';

describe('pictureUrl: a stored picture name as the web app loads it', () => {
  it('keeps a served path and a picture elsewhere as they are', () => {
    expect(pictureUrl('/imgs/blogs/5/0/a.png')).toBe('/imgs/blogs/5/0/a.png');
    expect(pictureUrl('/imgs/shops/1-0.png')).toBe('/imgs/shops/1-0.png');
    expect(pictureUrl('https://qcloud.dpfile.com/pc/x.jpg')).toBe('https://qcloud.dpfile.com/pc/x.jpg');
  });

  it('serves an upload name under /imgs', () => {
    expect(pictureUrl('/blogs/3/7/0a1b.png')).toBe('/imgs/blogs/3/7/0a1b.png');
  });

  it('gives nothing to load (the placeholder) for no name, a relative one or another scheme', () => {
    for (const name of [undefined, '', '  ', 'blogs/1/2/a.png', '//evil.example/a.png', 'javascript:alert(1)', 'data:image/png;base64,AA']) {
      expect(pictureUrl(name), String(name)).toBeNull();
    }
  });

  it('splits an images field, dropping blanks', () => {
    expect(pictureNames('/imgs/a.png, /imgs/b.png,,')).toEqual(['/imgs/a.png', '/imgs/b.png']);
    expect(pictureNames('')).toEqual([]);
    expect(pictureNames(undefined)).toEqual([]);
  });
});
