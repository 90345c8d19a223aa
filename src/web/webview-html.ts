/**
 * The HTML of the editor's chat view. No `vscode` import: the extension passes the webview's values
 * (`webview.cspSource`, `webview.asWebviewUri(...)` as strings, and a fresh nonce per render).
 */
export interface WebviewHtmlOptions {
  /** `webview.asWebviewUri(<extension>/media/chat-webview.js).toString()` */
  scriptUri: string;
  /** `webview.asWebviewUri(<extension>/media/chat.css).toString()` */
  styleUri: string;
  /** `webview.cspSource` */
  cspSource: string;
  /** A fresh random nonce (e.g. 32 base64/hex characters) for this render. */
  nonce: string;
  /** Document title; default "Remote Assistant". */
  title?: string;
}

export function renderWebviewHtml(options: WebviewHtmlOptions): string {
  const { scriptUri, styleUri, cspSource, nonce } = options;
  if (!/^[A-Za-z0-9+/=_-]{16,}$/.test(nonce)) throw new Error('renderWebviewHtml: the nonce must be at least 16 base64 or hex characters');
  const csp = ["default-src 'none'", `style-src ${cspSource}`, `script-src 'nonce-${nonce}'`, `img-src ${cspSource} data:`, `font-src ${cspSource}`, "base-uri 'none'", "form-action 'none'"].join(
    '; ',
  );
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${attr(styleUri)}">
<title>${text(options.title ?? 'Remote Assistant')}</title>
</head>
<body class="in-editor">
<div id="app"></div>
<script nonce="${attr(nonce)}" src="${attr(scriptUri)}"></script>
</body>
</html>`;
}

function text(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(value: string): string {
  return text(value).replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}
