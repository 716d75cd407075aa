// Trace view script: swaps in the HTML the extension renders, keeping which observations the
// user unfolded and following the bottom of the trace while it grows; and posts the images pasted
// into the view to the extension (VS Code's clipboard API holds text only), which checks them.
(function () {
  const vscode = acquireVsCodeApi();
  const root = document.getElementById("trace");
  const opened = new Set((vscode.getState() || {}).opened || []);

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!message || message.type !== "trace") return;
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    root.innerHTML = message.html;
    for (const details of root.querySelectorAll("details[data-key]")) {
      if (opened.has(details.dataset.key)) details.open = true;
      details.addEventListener("toggle", () => {
        if (details.open) opened.add(details.dataset.key);
        else opened.delete(details.dataset.key);
        vscode.setState({ sessionId: message.sessionId, opened: [...opened] });
      });
    }
    vscode.setState({ sessionId: message.sessionId, opened: [...opened] });
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  });

  // The daemon's bounds (traceView.ts writes them on <body>): no more images than a prompt takes, and
  // a file past the size bound is not read at all; the extension refuses it by its size.
  const maxBytes = Number(document.body.dataset.maxImageBytes);
  const maxImages = Number(document.body.dataset.maxImages);

  /** The image files of a paste (a screenshot is one); text and other files are left alone. */
  function pastedImages(data) {
    if (!data) return [];
    let files = [...(data.files || [])];
    if (files.length === 0) {
      files = [...(data.items || [])].filter((item) => item.kind === "file").map((item) => item.getAsFile());
    }
    return files.filter((file) => file && file.type.startsWith("image/")).slice(0, maxImages);
  }

  /** The file's bytes as base64: a data: URL without its head (an empty file's is "data:", no comma). */
  function base64Of(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        resolve(url.includes(",") ? url.slice(url.indexOf(",") + 1) : "");
      };
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
  }

  document.addEventListener("paste", async (event) => {
    const images = pastedImages(event.clipboardData);
    if (images.length === 0) return;
    event.preventDefault();
    for (const file of images) {
      const message = { type: "attachImage", mimeType: file.type, bytes: file.size };
      // Unread (too large, or the read failed), it goes without data: the extension says why it refused.
      if (file.size <= maxBytes) message.data = await base64Of(file).catch(() => undefined);
      vscode.postMessage(message);
    }
  });
})();
