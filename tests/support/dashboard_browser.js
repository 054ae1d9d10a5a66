// Drives Debian's Chromium (headless, through playwright-core) against a live coordinator's
// dashboard while a sweep runs, for tests/integration/dashboard.rs. Prints one JSON line of what it
// saw; the Rust test asserts on it. Environment: PLAYWRIGHT (the playwright-core module),
// CHROMIUM, DASHBOARD (http://host:port), TOKEN, SWEEP, SHOTS (a directory).
"use strict";

const { chromium } = require(process.env.PLAYWRIGHT);
const path = require("path");

const { CHROMIUM, DASHBOARD, TOKEN, SWEEP, SHOTS } = process.env;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const seen = { done: [], seeds: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // No token: refused, and the page says why.
    const refused = await page.goto(`${DASHBOARD}/`);
    seen.unauthorized_status = refused.status();
    seen.unauthorized_text = (await page.textContent("body")).trim();

    // The address armada prints: the token becomes a cookie, the address loses it.
    await page.goto(`${DASHBOARD}/?token=${TOKEN}#sweep=${SWEEP}`);
    seen.address = page.url();
    await page.waitForSelector("#progress-text[data-done]", { timeout: 30000 });
    // Watch without reloading: the page polls on its own.
    const deadline = Date.now() + 120000;
    let shot = false;
    while (Date.now() < deadline) {
      const done = Number(await page.getAttribute("#progress-text", "data-done"));
      const seeds = await page.$$eval("#curves .panel", (ps) => ps.reduce((n, p) => n + Number(p.dataset.seeds || 0), 0));
      if (seen.done[seen.done.length - 1] !== done || seen.seeds[seen.seeds.length - 1] !== seeds) {
        seen.done.push(done);
        seen.seeds.push(seeds);
      }
      if (!shot && done >= 4 && seeds > 0) {
        await page.screenshot({ path: path.join(SHOTS, "dashboard-running.png") });
        shot = true;
      }
      const state = await page.textContent("#sweeps tbody tr[data-sweep] td:nth-child(3)");
      if (state === "finished" && seeds >= 12) break;
      await sleep(300);
    }
    seen.final_done = Number(await page.getAttribute("#progress-text", "data-done"));
    seen.panels = await page.$$eval("#curves .panel", (ps) => ps.length);
    seen.lines = await page.$$eval("#curves .panel path.line", (ls) => ls.length);

    // Sort the final table by its algorithm column: ascending, then descending.
    const header = page.locator("#final thead th", { hasText: "algorithm" });
    const algorithms = () => page.$$eval("#final tbody tr td:nth-child(2)", (tds) => tds.map((td) => td.textContent));
    await header.click();
    seen.sorted_asc = await algorithms();
    await header.click();
    seen.sorted_desc = await algorithms();

    // A row's jobs, then one job's trajectory.
    await page.click("#final tbody tr:first-child");
    await page.waitForSelector("#jobs tbody tr.clickable", { timeout: 10000 });
    seen.jobs_listed = await page.$$eval("#jobs tbody tr", (rs) => rs.length);
    await page.click("#jobs tbody tr.clickable >> nth=0");
    await page.waitForSelector("#trajectory svg path.line", { timeout: 10000 });
    seen.trajectory_points = Number(await page.getAttribute("#trajectory svg path.line", "data-points"));
    seen.provenance = await page.textContent("#trajectory p.provenance");
    await page.screenshot({ path: path.join(SHOTS, "dashboard-finished.png"), fullPage: false });
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(seen));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
