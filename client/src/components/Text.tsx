// Text: message text drawn as text nodes and links only (Linkify), never parsed as HTML, IRC formatting removed.
import { linkify, stripFormatting } from "../Linkify.js"

export const Text = ({ text }: { readonly text: string }) => (
  <>
    {linkify(stripFormatting(text)).map((s, i) =>
      s.kind === "text" ? s.text : (
        <a key={i} href={s.href} target="_blank" rel="noopener noreferrer nofollow">
          {s.text}
        </a>
      )
    )}
  </>
)
