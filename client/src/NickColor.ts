// NickColor: a nick's colour class, the same for a nick in every buffer and tab (a hash of its folded form), from a
// fixed palette of 16 chosen in the stylesheet to read on both light and dark backgrounds. Pure.
import { fold } from "./Casemap.js"

export const nickColorClass = (nick: string): string => {
  let h = 5381
  for (const c of fold(nick)) h = ((h << 5) + h + c.charCodeAt(0)) | 0
  return `nc${(h >>> 0) % 16}`
}
