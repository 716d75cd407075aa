// Trace view script: swaps in the HTML the extension renders, keeping which observations the
// user unfolded and following the bottom of the trace while it grows.
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
})();
