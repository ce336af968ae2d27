"""ONE view of a plan in words: the headline, trade-off, deadline/budget and reason sentences that the app's Plan
page, the reports and the CLI all show, so every surface says the same thing in the same words."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from planner.engine.estimates import Plan, PlanOption, cost_of
from planner.engine.recommend import costed, deadline_hours
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.present.charts import option_label
from planner.present.i18n import t
from planner.present.notes import render_note, render_part
from planner.vocab import EXCHANGE_RATE_MAX_AGE_DAYS, GIB, MODEL_FAMILIES, QUOTE_MAX_AGE_DAYS


@dataclass(frozen=True)
class PlanView:
    """A plan's decision in one language. Sentences are plain text (no markup); surfaces add their own."""

    locale: str
    primary: PlanOption | None
    runner_up: PlanOption | None
    fastest_within_budget: PlanOption | None
    headline: str  # "Recommended: 1 × NVIDIA H100 SXM 80GB · bf16", or why nothing is recommended
    setting: str  # GPUs × micro-batch × accumulation for the global batch ("" when nothing is recommended)
    time: str
    cost: str
    deadline: str
    budget: str
    reason: str
    runner: str  # the runner-up and its trade-off
    fastest: str  # the fastest option within the budget, when it is not the recommended one ("" otherwise)
    counts: str
    unpriced: str = ""  # the GPUs that fit but have no price in the tier ("" when every one has)
    # The seeds' checklist: LR scaling and warm-up for this batch, the critical batch, and what evaluation and
    # early stopping do to the recommended run's hours and cost.
    advice: tuple[str, ...] = ()
    # What must be checked before deciding, in a few plain sentences (attention_sentences): the Plan page's
    # headline area and page 1 of every report show these, not only the per-option notes.
    warnings: tuple[str, ...] = ()
    # "Planned for: <stack>" (the scenario's training.stack or the family's default), and what the recommended
    # option's step time means per GPU (tokens or samples/s, MFU) to hold against a training log.
    planned_for: str = ""
    throughput: str = ""
    # "No published run like this …" when the recommended option's step time rests on no run of its model family,
    # stack and architecture group (issue 32 e); shown among the warnings (attention_sentences)
    unlike: str = ""
    # "Does not fit as given (needs 40.6 of 40.0 GiB); planned with micro-batch 4 …" when the recommended option runs
    # with a change the scenario did not ask for (issue 33, degrade never refuse); "" when it fits as given.
    degraded: str = ""
    # "It adds up as $9.76 GPU time (…) + $17.18 downloading the dataset … = $26.94.": every line of the headline's
    # cost (issue 35 d), said wherever the cost is.
    cost_lines: str = ""

    @property
    def summary(self) -> tuple[str, ...]:
        """The executive summary, in reading order."""
        if self.primary is None:
            return tuple(s for s in (self.headline, self.planned_for, self.counts) if s)
        return tuple(s for s in (self.degraded, self.setting, self.planned_for, self.time, self.throughput, self.cost,
                                 self.cost_lines, self.deadline,
                                 self.budget, self.reason, self.runner, self.unpriced, *self.advice, self.counts) if s)

    @property
    def decision(self) -> tuple[str, ...]:
        """What the Plan page says under its metrics: why this one, deadline, budget, runner-up."""
        if self.primary is None:
            return ()
        return tuple(s for s in (self.reason, self.deadline, self.budget, self.fastest, self.runner, self.unpriced,
                                 *self.advice) if s)


def plan_view(plan: Plan, scenario: Scenario, locale: str, today: dt.date | None = None) -> PlanView:
    """`today` dates the quotes and the exchange rate (the reports pass theirs; default: the clock)."""
    r = plan.recommendation
    primary, runner = plan.option(r.primary), plan.option(r.runner_up)
    fastest = plan.option(r.fastest_within_budget)
    n_fit = sum(1 for o in plan.options if o.fits)
    counts = t("summary.counts", locale, total=len(plan.options), fit=n_fit, priced=len(costed(plan.options)))
    if primary is None or primary.cost is None:
        key = "none_fit" if n_fit == 0 else "none_priced"
        none = t(f"summary.{key}", locale, tier=scenario.pricing.tier)
        return PlanView(locale, None, None, None, none, "", "", "", "", "", "", "", "", counts,
                        planned_for=planned_for_sentence(plan, locale))
    c = primary.cost
    return PlanView(
        locale=locale,
        primary=primary,
        runner_up=runner,
        fastest_within_budget=fastest,
        headline=t("summary.headline", locale, option=option_label(primary)),
        setting=t("summary.recommend", locale, n=primary.n_gpus, gpu=primary.gpu_name, precision=primary.precision,
                  batch=fmt.number(scenario.training.global_batch, locale, 0), micro=primary.micro_batch,
                  accum=primary.grad_accum),
        time=t("summary.time", locale, hours=fmt.hours(c.hours, locale), range=time_range(primary, locale),
               steps=fmt.number(primary.convergence.steps, locale, 0) if primary.convergence else "—",
               step=fmt.sig(primary.step.step_time_s, locale) if primary.step else "—"),
        cost=t("summary.cost", locale, cost=cost_text(primary, locale), range=cost_range_text(primary, locale),
               price=fmt.money(c.price.usd_per_gpu_hour, "USD", locale, 2) if c.price else "—",
               provider=c.price.provider if c.price else "—", gpu_hours=fmt.number(c.gpu_hours, locale, 1)),
        cost_lines=cost_lines_sentence(primary, locale),
        deadline=deadline_sentence(plan, scenario, primary, locale),
        budget=budget_sentence(scenario, primary, locale),
        reason=reason_sentence(plan, scenario, primary, locale),
        runner=runner_sentence(primary, runner, locale, deadline=scenario.constraints.deadline_hours,
                               confidence=r.deadline_confidence),
        fastest=_fastest_sentence(scenario, primary, fastest, locale),
        counts=counts,
        unpriced=unpriced_sentence(plan, scenario, locale),
        advice=advice_sentences(plan, scenario, primary, locale),
        warnings=attention_sentences(plan, scenario, locale, today or dt.date.today()),
        planned_for=planned_for_sentence(plan, locale),
        throughput=throughput_sentence(primary, locale),
        unlike=unlike_sentence(primary, locale),
        degraded=degraded_sentence(primary, locale),
    )


def degraded_sentence(o: PlanOption, locale: str) -> str:
    """'Does not fit as given (needs 40.6 of 40.0 GiB); planned with micro-batch 4: 35.1 GiB.' for an option planned
    with a change (PlanOption.planned_with); '' for one that fits as given."""
    pw, m = o.planned_with, o.memory
    if pw is None or m is None:
        return ""
    return t("summary.degraded", locale, need=fmt.number(m.total / GIB, locale),
             capacity=fmt.number(m.capacity / GIB, locale), changes=", ".join(render_part(c, locale) for c in pw.change_notes()),
             gib=fmt.number(pw.memory.total / GIB, locale))


def unlike_sentence(o: PlanOption, locale: str) -> str:
    """'No published run like this …' for an option whose step time no run of its kind was checked on; '' else."""
    note = next((n for n in (o.step.notes if o.step else ()) if n.key == "unlike_corpus"), None)
    if note is None:
        return ""
    p = note.params
    family = str(p["family"]) if p["family"] in MODEL_FAMILIES else "custom"
    return t("summary.unlike_corpus", locale, family=t(f"common.family.{family}", locale),
             stack=t(f"common.stack.{p['stack']}", locale), group=p["group"])


def planned_for_sentence(plan: Plan, locale: str) -> str:
    """'Planned for: Hugging Face Trainer / Accelerate / PEFT, SDPA attention (the default for ...)'; "" for a plan
    without a stack (not built by build_plan)."""
    if plan.stack is None:
        return ""
    stack = t(f"common.stack.{plan.stack}", locale)
    if plan.stack_defaulted and plan.model is not None:
        # a result file may name a family outside the vocabulary: planned (and said) as a custom model's
        family = plan.model.family if plan.model.family in MODEL_FAMILIES else "custom"
        return t("summary.planned_for_default", locale, stack=stack, family=t(f"common.family.{family}", locale))
    return t("summary.planned_for", locale, stack=stack)


def rate_per_gpu_text(o: PlanOption, locale: str) -> str:
    """'3,120 tokens/s' for a sequence model, '1,301 samples/s' otherwise (per GPU); '—' when not timed."""
    tp = o.throughput
    if tp is None:
        return fmt.MISSING
    if tp.tokens_per_s_per_gpu is not None:
        return t("summary.tokens_rate", locale, n=fmt.number(tp.tokens_per_s_per_gpu, locale, 0))
    return t("summary.samples_rate", locale, n=fmt.sig(tp.samples_per_s_per_gpu, locale))


def mfu_text(o: PlanOption, locale: str) -> str:
    """MFU as a percentage ('38 %'); '—' when the FLOPs or the peak are unknown."""
    return fmt.percent(o.throughput.mfu if o.throughput else None, locale)


def throughput_sentence(o: PlanOption, locale: str) -> str:
    """What the option's step time means per GPU, in a training log's units, with the step time's source."""
    tp = o.throughput
    if tp is None:
        return ""
    key = "summary.throughput" if tp.mfu is not None else "summary.throughput_no_mfu"
    return t(key, locale, rate=rate_per_gpu_text(o, locale), mfu=mfu_text(o, locale), precision=o.precision)


def time_range(o: PlanOption, locale: str) -> str:
    lo, hi = cost_of(o).hours_range
    return t("report.range", locale, low=fmt.hours(lo, locale), high=fmt.hours(hi, locale))


def cost_text(o: PlanOption, locale: str) -> str:
    """'€1.234 (US$1.345)' in a foreign currency; '$1,234' in USD."""
    c = cost_of(o)
    usd = fmt.money(c.usd, "USD", locale)
    if c.currency == "USD":
        return usd
    return f"{fmt.money(c.amount_in_currency, c.currency, locale)} ({usd})"


def cost_line_parts(o: PlanOption, locale: str) -> tuple[tuple[str, float, str], ...]:
    """The lines of an option's cost (CostEstimate.lines) as (name, USD, words): GPU time always, storage, egress
    and tax when they are not zero; their USD add up to the option's cost. () for an option without a price."""
    c = o.cost
    if c is None or c.lines is None:
        return ()
    ln = c.lines
    price = fmt.money(c.price.usd_per_gpu_hour, "USD", locale, 2) if c.price else "—"
    parts = [("gpu", ln.gpu_usd, t("summary.cost_line.gpu", locale, usd=fmt.money(ln.gpu_usd, "USD", locale),
                                   gpu_hours=fmt.number(c.gpu_hours, locale, 1), price=price))]
    for name, usd in (("storage", ln.storage_usd), ("egress", ln.egress_usd)):
        if usd:
            parts.append((name, usd, t(f"summary.cost_line.{name}", locale, usd=fmt.money(usd, "USD", locale))))
    if ln.tax_usd:
        parts.append(("tax", ln.tax_usd, t("summary.cost_line.tax", locale, usd=fmt.money(ln.tax_usd, "USD", locale),
                                           rate=fmt.percent(ln.tax_rate, locale))))
    return tuple(parts)


def cost_lines_sentence(o: PlanOption, locale: str) -> str:
    """'It adds up as $9.76 GPU time (28.7 GPU-hours × $0.34 per GPU-hour) + $17.18 downloading the dataset … =
    $26.94.': what makes the headline's cost, in USD; '' for an option without a price or whose cost is its GPU
    time alone (the cost sentence already says GPU-hours × price)."""
    parts = cost_line_parts(o, locale)
    if len(parts) < 2:
        return ""
    return t("summary.cost_lines", locale, lines=" + ".join(words for _, _, words in parts),
             total=fmt.money(cost_of(o).usd, "USD", locale))


def cost_range_text(o: PlanOption, locale: str) -> str:
    c = cost_of(o)
    lo, hi = c.amount_range_in_currency
    return t("report.range", locale, low=fmt.money(lo, c.currency, locale), high=fmt.money(hi, c.currency, locale))


def deadline_sentence(plan: Plan, scenario: Scenario, o: PlanOption, locale: str) -> str:
    deadline = scenario.constraints.deadline_hours
    if deadline is None:
        return t("summary.no_deadline", locale)
    d = fmt.hours(deadline, locale)
    hours, high = cost_of(o).hours, cost_of(o).hours_range[1]
    if high <= deadline:
        return t("summary.deadline_safe", locale, deadline=d)
    if hours <= deadline:
        return t("summary.deadline_likely", locale, deadline=d, high=fmt.hours(high, locale))
    key = "deadline_missed_all" if plan.recommendation.cheapest_within_deadline is None else "deadline_missed"
    return t(f"summary.{key}", locale, deadline=d, hours=fmt.hours(hours, locale))


def budget_sentence(scenario: Scenario, o: PlanOption, locale: str) -> str:
    budget = scenario.constraints.budget_usd
    if budget is None:
        return t("summary.no_budget", locale)
    b = fmt.money(budget, "USD", locale)
    usd, high = cost_of(o).usd, cost_of(o).usd_range[1]
    if high <= budget:
        return t("summary.budget_safe", locale, budget=b)
    if usd <= budget:
        return t("summary.budget_likely", locale, budget=b, high=fmt.money(high, "USD", locale))
    return t("summary.budget_over", locale, budget=b, usd=fmt.money(usd, "USD", locale))


def reason_sentence(plan: Plan, scenario: Scenario, o: PlanOption, locale: str) -> str:
    r = plan.recommendation
    if r.fallback == "fastest" and (faster := _faster_than(plan, o, r.deadline_confidence)) is not None:
        # issue 35 e: "the fastest" only when no costed option takes fewer hours at the confidence that was checked
        why = t("summary.reason_fallback.fastest_of_clean", locale, option=option_label(faster),
                hours=fmt.hours(deadline_hours(faster, r.deadline_confidence), locale),
                mine=fmt.hours(deadline_hours(o, r.deadline_confidence), locale))
    elif r.fallback:
        why = t(f"summary.reason_fallback.{r.fallback}", locale)
    elif scenario.constraints.deadline_hours is None:
        why = t("summary.reason_cheapest", locale)
    else:
        why = t("summary.reason_deadline" if r.deadline_confidence == "p90" else "summary.reason_deadline_p50", locale)
    if o.id == r.primary and r.primary_risks:
        risks = ", ".join(t(f"summary.risk.{k}", locale) for k in r.primary_risks)
        why += " " + t("summary.reason_risky", locale, risks=risks)
    aside = plan.option(r.set_aside)
    if o.id == r.primary and aside is not None:
        risks = ", ".join(t(f"summary.risk.{k}", locale) for k in r.set_aside_risks)
        # what would make it the pick, per kind of risk (a saved price is never stale; headroom needs memory)
        fixes = dict.fromkeys(t("summary.fix.memory" if k == "tight_memory" else "summary.fix.price", locale)
                              for k in r.set_aside_risks)
        why += " " + t("summary.set_aside", locale, option=option_label(aside), cost=cost_text(aside, locale),
                       risks=risks, fix="; ".join(fixes))
    return why


def _faster_than(plan: Plan, o: PlanOption, confidence: str) -> PlanOption | None:
    """The costed option with the fewest hours at `confidence` (recommend.deadline_hours) when it beats `o`'s."""
    best = min(costed(plan.options), key=lambda x: deadline_hours(x, confidence), default=None)
    if best is None or deadline_hours(best, confidence) >= deadline_hours(o, confidence):
        return None
    return best


def advice_sentences(plan: Plan, scenario: Scenario, o: PlanOption, locale: str) -> tuple[str, ...]:
    """The batch checklist (plan.advice) as sentences, and evaluation and early stopping as time and cost lines."""
    out = [_sentence(render_note(n, locale)) for n in plan.advice]
    c, w = cost_of(o), scenario.workload
    overheads = 1 + w.eval_overhead + w.checkpoint_overhead
    if w.eval_overhead > 0:  # hours = steps x early stop x step x (1 + eval + checkpoint) x ... (cost.run_hours)
        share = w.eval_overhead / overheads
        out.append(t("summary.eval_line", locale, pct=fmt.percent(w.eval_overhead, locale),
                     hours=fmt.hours(c.hours * share, locale), cost=fmt.money(c.usd * share, "USD", locale)))
    if w.early_stop_fraction < 1:
        saved = (1 - w.early_stop_fraction) / w.early_stop_fraction
        out.append(t("summary.early_stop_line", locale, pct=fmt.percent(w.early_stop_fraction, locale),
                     hours=fmt.hours(c.hours * saved, locale), cost=fmt.money(c.usd * saved, "USD", locale)))
    return tuple(out)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def unpriced_sentence(plan: Plan, scenario: Scenario, locale: str) -> str:
    """'No spot price for NVIDIA RTX 3090, …': GPUs with an option that fits and none with a price (on-prem: no
    purchase price and no override)."""
    fitting: dict[str, list[PlanOption]] = {}
    for o in plan.options:
        if o.fits is not False:
            fitting.setdefault(o.gpu_name, []).append(o)
    names = [g for g, opts in fitting.items() if not any(o.cost is not None and o.cost.price for o in opts)]
    if not names:
        return ""
    if scenario.pricing.tier == "on_prem":
        return t("summary.no_purchase_price_for", locale, gpus=", ".join(names))
    return t("summary.no_quote_for", locale, tier=t(f"report.tier.{scenario.pricing.tier}", locale),
             gpus=", ".join(names))


def trade_off(a: PlanOption, b: PlanOption, locale: str) -> str:
    """How b compares with a: '2.1× faster for 1.4× the cost', '2,1× más rápida por 1,4× el costo'."""
    speed = cost_of(a).hours / cost_of(b).hours if cost_of(b).hours else float("inf")
    price = cost_of(b).usd / cost_of(a).usd if cost_of(a).usd else float("inf")
    if speed >= 1:
        return t("summary.trade.faster", locale, speed=fmt.number(speed, locale, 1),
                 price=fmt.number(price, locale, 1))
    return t("summary.trade.slower", locale, speed=fmt.number(1 / speed, locale, 1),
             price=fmt.number(price, locale, 2))


def runner_sentence(primary: PlanOption, runner: PlanOption | None, locale: str, *, deadline: float | None = None,
                    confidence: str = "p90") -> str:
    """The runner-up and its trade-off; with a deadline, said when the runner-up misses it at `confidence`
    (issue 35 e: a faster runner-up that is late too must not read as the way out)."""
    if runner is None:
        return t("summary.no_runner_up", locale)
    said = t("summary.runner_up", locale, option=option_label(runner), trade=trade_off(primary, runner, locale),
             hours=fmt.hours(cost_of(runner).hours, locale), cost=cost_text(runner, locale))
    if deadline is not None and deadline_hours(runner, confidence) > deadline:
        said += " " + t(f"summary.runner_misses_deadline_{confidence}", locale, deadline=fmt.hours(deadline, locale),
                        hours=fmt.hours(deadline_hours(runner, confidence), locale))
    return said


def _fastest_sentence(scenario: Scenario, primary: PlanOption, fastest: PlanOption | None, locale: str) -> str:
    if scenario.constraints.budget_usd is None or fastest is None or fastest.id == primary.id:
        return ""
    return t("summary.fastest_in_budget", locale, option=option_label(fastest),
             hours=fmt.hours(cost_of(fastest).hours, locale))


# ---------------------------------------------------------------- what to check before deciding

FAR_KINDS = ("analytic", "extrapolated", "transferred")  # step times not read off a measurement of this GPU


def attention_sentences(plan: Plan, scenario: Scenario, locale: str, today: dt.date) -> tuple[str, ...]:
    """Deadline and budget misses, formula-only or transferred step times, tight memory, stale or undated quotes
    and exchange rate, and how the GPUs are rented, for the recommended option and its runner-up: one plain
    sentence each (options with the same caveat share one)."""
    r = plan.recommendation
    primary = plan.option(r.primary)
    if primary is None or primary.cost is None:
        return ()
    featured = [o for o in (primary, plan.option(r.runner_up)) if o is not None and o.cost is not None]
    out = [s for s in (_deadline_attention(scenario, primary, locale), _budget_attention(scenario, primary, locale))
           if s]
    model = scenario.model.name or t("attention.this_model", locale)
    for kind in FAR_KINDS:
        far = [o for o in featured if o.step is not None and o.step.source.kind == kind]
        if far:
            out.append(t(f"attention.step_{kind}", locale, model=model, options=_join((option_label(o) for o in far), locale),
                         gpus=_join(dict.fromkeys(o.gpu_name for o in far), locale)))
    unlike = unlike_sentence(primary, locale)  # no published run like the recommended one (issue 32 e)
    if unlike:
        out.append(unlike)
    for o in featured:
        m = o.memory
        if m is not None and o.fits and m.verdict == "borderline":
            out.append(t("attention.tight_memory", locale, option=option_label(o),
                         total=fmt.number(m.total / GIB, locale), capacity=fmt.number(m.capacity / GIB, locale),
                         headroom=fmt.percent(m.headroom, locale, 1)))
    for o in featured:
        out.extend(s for s in (_quote_attention(o, locale, today), _topology_attention(o, scenario, locale)) if s)
    rate = _rate_attention(scenario, locale, today)
    if rate:
        out.append(rate)
    return tuple(dict.fromkeys(out))


def _join(items: Iterable[str], locale: str) -> str:
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + t("attention.and", locale) + items[-1]


def _deadline_attention(scenario: Scenario, o: PlanOption, locale: str) -> str:
    deadline = scenario.constraints.deadline_hours
    if deadline is None:
        return ""
    c = cost_of(o)
    params = {"option": option_label(o), "deadline": fmt.hours(deadline, locale), "hours": fmt.hours(c.hours, locale),
              "high": fmt.hours(c.hours_range[1], locale)}
    if c.hours > deadline:
        return t("attention.deadline_missed", locale, **params)
    if c.hours_range[1] > deadline:
        return t("attention.deadline_at_risk", locale, **params)
    return ""


def _budget_attention(scenario: Scenario, o: PlanOption, locale: str) -> str:
    budget = scenario.constraints.budget_usd
    if budget is None:
        return ""
    c = cost_of(o)
    params = {"option": option_label(o), "budget": fmt.money(budget, "USD", locale),
              "usd": fmt.money(c.usd, "USD", locale), "high": fmt.money(c.usd_range[1], "USD", locale)}
    if c.usd > budget:
        return t("attention.budget_over", locale, **params)
    if c.usd_range[1] > budget:
        return t("attention.budget_at_risk", locale, **params)
    return ""


def _quote_attention(o: PlanOption, locale: str, today: dt.date) -> str:
    """The fresh-prices rule (planner.inputs.profiles.quote_freshness): a published quote older than
    QUOTE_MAX_AGE_DAYS, or with no date, is flagged where it is shown; a user's own price never is."""
    p = o.cost.price if o.cost else None
    if p is None or p.origin != "published":
        return ""
    offer = fmt.offer(p.provider, p.instance, p.region)
    if p.as_of is None:
        return t("attention.quote_undated", locale, option=option_label(o), offer=offer)
    age = (today - dt.date.fromisoformat(str(p.as_of)[:10])).days
    if age <= QUOTE_MAX_AGE_DAYS:
        return ""
    return t("attention.quote_stale", locale, option=option_label(o), offer=offer, date=fmt.date(p.as_of, locale),
             days=fmt.number(age, locale, 0), limit=QUOTE_MAX_AGE_DAYS)


def _rate_attention(scenario: Scenario, locale: str, today: dt.date) -> str:
    p = scenario.pricing
    if p.currency == "USD":
        return ""
    rate = fmt.sig(p.exchange_rate, locale, 4)
    if p.exchange_rate_as_of is None:
        return t("attention.rate_undated", locale, rate=rate, currency=p.currency)
    as_of = dt.date.fromisoformat(str(p.exchange_rate_as_of)[:10])
    age = (today - as_of).days
    if age <= EXCHANGE_RATE_MAX_AGE_DAYS:
        return ""
    return t("attention.rate_stale", locale, rate=rate, currency=p.currency, date=fmt.date(as_of, locale),
             days=fmt.number(age, locale, 0), limit=EXCHANGE_RATE_MAX_AGE_DAYS)


def _topology_attention(o: PlanOption, scenario: Scenario, locale: str) -> str:
    c = o.cost
    if c is None or c.price is None or o.topology not in ("multi_node", "separate_nodes"):
        return ""
    return t(f"attention.topology_{o.topology}", locale, option=option_label(o), k=c.price.gpus_per_instance,
             provider=c.price.provider,
             gb_s=fmt.number(scenario.hardware.inter_node_gb_per_s, locale, 0))
