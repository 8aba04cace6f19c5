"""What `snakemake` prints while rlvr's pipeline runs: a progress line, the config summary and
the failures, not the dozen lines Snakemake writes for every job.

profiles/default/config.yaml selects it (`logger: [rlvr]`); Snakemake still writes its full log
to .snakemake/log/. Warnings, errors (with the failed job's log, `show-failed-logs`) and every
message not listed in CHATTER pass through, formatted as Snakemake formats them. A dry run
(`-n`) prints exactly what Snakemake prints.
"""

import sys
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


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    pass


class LogHandler(LogHandlerBase):
    def __post_init__(self):
        self.stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self.last_progress = 0.0

    def emit(self, record):
        if not self.common_settings.dryrun and not self.shown(record):
            return
        try:
            self.stream.write(self.format(record).rstrip("\n") + "\n")
            self.stream.flush()
        except Exception:
            self.handleError(record)

    def shown(self, record):
        event = getattr(record, "event", None)
        if record.levelno >= 30:  # WARNING and above, job errors among them
            return True
        if event == LogEvent.PROGRESS:
            now = time.monotonic()
            if record.done < record.total and now - self.last_progress < PROGRESS_EVERY:
                return False
            self.last_progress = now
            record.msg = f"[{time.strftime('%H:%M:%S')}] {record.done} of {record.total} jobs done"
            record.event = None  # formatted as the plain message above
            return True
        if event in QUIET_EVENTS:
            return False
        return not str(record.msg).startswith(CHATTER)

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
