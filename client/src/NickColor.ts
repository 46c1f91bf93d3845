// NickColor: a nick's colour class, the same for a nick in every buffer and tab (a hash of its folded form), from a
// fixed palette of 16 in the stylesheet, each at least 4.5:1 (WCAG 2.2 SC 1.4.3) on every background a line can have
// — plain, the member's own, a highlight — in the light and the dark scheme (test/system/Accessibility.browser.test.ts
// checks it with axe). Pure.
import { fold } from "./Casemap.js"

export const nickColorClass = (nick: string): string => {
  let h = 5381
  for (const c of fold(nick)) h = ((h << 5) + h + c.charCodeAt(0)) | 0
  return `nc${(h >>> 0) % 16}`
}
