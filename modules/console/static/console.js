// civicgate console: the one script (CSP script-src 'self'). It only adds
// copy buttons; every action works without it.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
	document.querySelectorAll("button[data-copy]").forEach(function (b) {
		b.hidden = false;
		b.addEventListener("click", function () {
			var field = document.getElementById(b.getAttribute("data-copy"));
			if (!field) { return; }
			field.select();
			var done = function () { b.textContent = "Copied"; };
			if (navigator.clipboard && window.isSecureContext) {
				navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
			} else {
				document.execCommand("copy");
				done();
			}
		});
	});
});
