"""What `snakemake` prints while rlvr's pipeline runs: a progress line, the config summary and
the failures, not the dozen lines Snakemake writes for every job.

profiles/default/config.yaml selects it (`logger: [rlvr]`); Snakemake still writes its full log
to .snakemake/log/. Warnings, errors (with the failed job's log, `show-failed-logs`) and every
message not listed in CHATTER pass through, formatted as Snakemake formats them. A dry run
(`-n`) prints, in place of each job's block, the summary a run prints at its start (what the
config asks for, per experiment, and how many jobs would run: handed over by the Snakefile,
workflow/rules/common.smk, as Snakemake runs no `onstart` in a dry run) and the jobs per rule
on a few lines; `--workflow-profile none` prints Snakemake's own dry run.
"""

import re
import sys
import threading
import time
from dataclasses import dataclass

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

# said once per job, or about the machine: in the full log only
QUIET_EVENTS = {LogEvent.JOB_INFO, LogEvent.JOB_STARTED, LogEvent.JOB_FINISHED, LogEvent.GROUP_INFO,
                LogEvent.RESOURCES_INFO, LogEvent.RUN_INFO}
CHATTER = ("Select jobs to execute", "Building DAG of jobs", "Using shell:", "Assuming unrestricted",
           "Conda environments: ignored", "Group jobs: inactive", "Workflow has started")
PROGRESS_EVERY = 5.0  # seconds between two progress lines (the last job's is always shown)
QUIET_FOR = 30.0  # while jobs run and nothing was printed for this long, a progress line anyway
NAMED = 3  # running jobs a progress line names (the longest-running), then "and N more"
# a dry run: Snakemake's summary of the job blocks it printed, and its advice on them; the jobs
# and why each would run: `snakemake -n --workflow-profile none`
DRY_RUN_CHATTER = ("Reasons:", "Some jobs were triggered by provenance", "Rules with provenance triggered")
DRY_RUN_MORE = "rlvr: each job and why it would run: snakemake -n --workflow-profile none"
NOTHING_TO_BE_DONE = "Nothing to be done"
WIDTH = 100  # of the lines of a dry run's job stats
TRAIN = "train"  # the training packs' rules are train_<pack> (rlvr/packs.py)
NETWORK = "network"  # the network's training rules are network_<hash of its row> (workflow/rules/network.smk)
NETWORK_ROW = re.compile(rf"^{NETWORK}_[0-9a-f]{{10}}$")
NETWORK_BASE = "network_base"  # a base a seed: network_base_seed<s>
NETWORK_BASE_SEED = re.compile(rf"^{NETWORK_BASE}_seed\d+$")


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    pass


def job_stats(stats):
    """Snakemake's "Job stats" table ({rule: jobs, ..., "total": jobs}) on a few lines, a rule
    never apart from its count: "Job stats (216 jobs): task 1, train 182, ..." """
    total = stats.get("total", sum(stats.values()))
    folded = {}  # the training packs' rules, train_<pack>, as one: "train"; network_<hash>: "network";
    # network_base_seed<s>: "network_base"
    for rule, count in stats.items():
        if rule != "total":
            key = (TRAIN if rule.startswith(f"{TRAIN}_") else NETWORK if NETWORK_ROW.match(rule)
                   else NETWORK_BASE if NETWORK_BASE_SEED.match(rule) else rule)
            folded[key] = folded.get(key, 0) + count
    lines, line = [], f"Job stats ({total} jobs):"
    for rule, count in folded.items():
        item = f" {rule} {count},"
        if len(line) + len(item) > WIDTH:
            lines.append(line)
            line = " "
        line += item
    return "\n".join([*lines, line.rstrip(",")])


def job_name(rule, wildcards):
    """What a running job is, in a few words: its rule, and for a training pack (rule
    train_<experiment>_<hash>, rlvr/packs.py) "train" and its demo."""
    if rule.startswith(f"{TRAIN}_"):
        return f"{TRAIN} {rule[len(TRAIN) + 1:].rsplit('_', 1)[0]}"
    if NETWORK_ROW.match(rule):
        return NETWORK
    return rule


class LogHandler(LogHandlerBase):
    def __post_init__(self):
        self.stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self.clock = time.monotonic
        self.last_progress = 0.0
        self.last_printed = 0.0
        self.done_total = None
        self.running = {}  # jobid -> (what it is, when it started)
        self.write_lock = threading.Lock()  # not self.lock: logging.Handler holds that one around emit
        self.heartbeat = None
        # a dry run: what_runs([(rule, wildcards) of each job]) -> the rlvr summary of those jobs,
        # set by the Snakefile as it is parsed (workflow/rules/common.smk); the jobs listed so far;
        # the "Job stats" records seen (the first comes before the jobs, the second after them)
        self.summarise = None
        self.listed = []
        self.run_infos = 0

    def emit(self, record):
        shown = self.shown_in_dry_run(record) if self.common_settings.dryrun else self.shown(record)
        if shown:
            self.write(self.format(record), record)

    def write(self, text, record=None):
        with self.write_lock:  # the heartbeat writes from its own thread
            try:
                self.stream.write(text.rstrip("\n") + "\n")
                self.stream.flush()
                self.last_printed = self.clock()
            except Exception:
                if record is not None:
                    self.handleError(record)

    def shown(self, record):
        event = getattr(record, "event", None)
        if event == LogEvent.RUN_INFO and self.done_total is None:  # the run's jobs, before any ends
            total = (getattr(record, "stats", None) or {}).get("total")
            self.done_total = (0, total) if total else None
        if event == LogEvent.JOB_INFO:
            self.running[record.jobid] = (job_name(record.rule_name, getattr(record, "wildcards", None)),
                                          self.clock())
            self.start_heartbeat()
        elif event == LogEvent.JOB_FINISHED:
            self.running.pop(getattr(record, "job_id", None), None)
        elif event == LogEvent.JOB_ERROR:
            self.running.pop(getattr(record, "jobid", None), None)
        if record.levelno >= 30:  # WARNING and above, job errors among them
            return True
        if event == LogEvent.PROGRESS:
            now = self.clock()
            self.done_total = (record.done, record.total)
            if record.done < record.total and now - self.last_progress < PROGRESS_EVERY:
                return False
            self.last_progress = now
            record.msg = self.progress_line()
            record.event = None  # formatted as the plain message above
            return True
        if event in QUIET_EVENTS:
            return False
        return not str(record.msg).startswith(CHATTER)

    def shown_in_dry_run(self, record):
        """A dry run: each job Snakemake lists is noted, not shown; after the last, the rlvr
        summary of the jobs listed and the job stats on a few lines (or, with nothing to be done,
        the summary before Snakemake says so); Snakemake's reasons and advice about the job blocks
        are left out, the rest passes as in a run."""
        event = getattr(record, "event", None)
        if event == LogEvent.JOB_INFO:
            self.listed.append((record.rule_name, getattr(record, "wildcards", None) or {}))
            return False
        if event == LogEvent.RUN_INFO:
            self.run_infos += 1
            if self.run_infos < 2:  # the DAG's, before the jobs are listed
                return False
            stats = getattr(record, "stats", None) or {}
            jobs = self.listed if len(self.listed) == stats.get("total") else None  # None: not all listed
            record.msg = "\n".join(filter(None, [self.summary(jobs), job_stats(stats), DRY_RUN_MORE]))
            record.event = None  # formatted as the plain message above
            return True
        if record.levelno >= 30:
            return True
        if event in QUIET_EVENTS:
            return False
        message = str(record.msg)
        if message.startswith(NOTHING_TO_BE_DONE):
            summary = self.summary([])
            if summary:
                record.msg = f"{summary}\n{message}"
            return True
        return not message.startswith(CHATTER + DRY_RUN_CHATTER)

    def summary(self, jobs):
        """The Snakefile's summary of these jobs (None: they are not known), or None if it gave
        none (another workflow, or its parse failed)."""
        if self.summarise is None:
            return None
        try:
            return self.summarise(jobs)
        except Exception as err:  # a summary that fails must not hide what Snakemake says
            return f"rlvr: no summary of the dry run ({type(err).__name__}: {err})"

    def progress_line(self):
        """"[12:01:02] 40 of 181 jobs done; running: figures_clipping (12 s), train
        clipping/grpo (3 s)": the longest-running jobs first, with how long each has run."""
        now = self.clock()
        done, total = self.done_total or (0, "?")
        line = f"[{time.strftime('%H:%M:%S')}] {done} of {total} jobs done"
        running = sorted(list(self.running.values()), key=lambda job: job[1])  # a copy, for the heartbeat
        if running and done != total:
            named = [f"{name} ({now - start:.0f} s)" for name, start in running[:NAMED]]
            more = f" and {len(running) - NAMED} more" if len(running) > NAMED else ""
            line += f"; running: {', '.join(named)}{more}"
        return line

    def start_heartbeat(self):
        """A progress line when nothing was printed for QUIET_FOR seconds while jobs run (a long
        job would otherwise leave the terminal silent)."""
        if self.heartbeat is None and not self.common_settings.dryrun:
            self.heartbeat = threading.Thread(target=self.beat, daemon=True)
            self.heartbeat.start()

    def beat(self):
        while True:
            time.sleep(1.0)
            self.beat_once()

    def beat_once(self):
        """Print a progress line if jobs run and nothing was printed for QUIET_FOR seconds."""
        if self.running and self.clock() - self.last_printed >= QUIET_FOR:
            self.write(self.progress_line())

    @property
    def writes_to_stream(self):
        return True

    @property
    def writes_to_file(self):
        return False

    @property
    def needs_rulegraph(self):
        return False

    @property
    def has_filter(self):
        return False  # Snakemake's own filter first (--quiet, --printshellcmds), then shown()

    @property
    def has_formatter(self):
        return False  # Snakemake's formatter: job errors and failed logs look as they always do
