"""What `snakemake` prints while rlvr's pipeline runs: a progress line, the config summary and
the failures, not the dozen lines Snakemake writes for every job.

profiles/default/config.yaml selects it (`logger: [rlvr]`); Snakemake still writes its full log
to .snakemake/log/. Warnings, errors (with the failed job's log, `show-failed-logs`) and every
message not listed in CHATTER pass through, formatted as Snakemake formats them. A dry run
(`-n`) prints exactly what Snakemake prints.
"""

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


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    pass


def job_name(rule, wildcards):
    """What a running job is, in a few words: its rule, and for a training job its demo and
    estimator (the row's wildcard runs/<experiment>/<method>/...)."""
    row = (wildcards or {}).get("row", "")
    return f"{rule} {'/'.join(row.split('/')[1:3])}" if row.startswith("runs/") else rule


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

    def emit(self, record):
        if not self.common_settings.dryrun and not self.shown(record):
            return
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
