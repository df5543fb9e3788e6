// Applies the saved light/dark choice before the page paints (a file, not inline: the CSP allows no inline script).
(function () {
  try {
    var t = localStorage.getItem('console-theme');
    if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
  } catch (e) {}
})();
