// Forms that ask before they submit: <form data-confirm="Cancel job #3?">. A static file rather than an inline
// onsubmit handler, so the Content-Security-Policy can forbid inline script.
document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
