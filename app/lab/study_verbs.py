"""The Studies port: the experiment store and the lab's one background job.

A part of app.lab.root.Lab (a mixin): its verbs read the parts Lab.create wired (_store, _jobs)."""
from __future__ import annotations

from app.lab.jobs import Job, JobState
from app.store.database import Experiment, Study


class StudyVerbs:
    """The experiment store and the lab's one background job."""

    def runs(self, model: str | None = None, kind: str | None = "run", study_id: int | None = None) -> list[Experiment]:
        """Return stored runs, newest first."""
        return self._store.runs(model=model, kind=kind, study_id=study_id)

    def run(self, run_id: int) -> Experiment:
        """Return one stored run."""
        return self._store.run(run_id)

    def add_run(self, run: Experiment) -> int:
        """Store a run; return its id."""
        return self._store.add_run(run)

    def relabel_run(self, run_id: int, label: str) -> None:
        """Rename a stored run."""
        self._store.relabel_run(run_id, label)

    def delete_run(self, run_id: int) -> None:
        """Delete a stored run."""
        self._store.delete_run(run_id)

    def studies(self, kind: str | None = None, model: str | None = None) -> list[Study]:
        """Return stored studies, newest first."""
        return self._store.studies(kind=kind, model=model)

    def study(self, study_id: int) -> Study:
        """Return one stored study."""
        return self._store.study(study_id)

    def add_study(self, study: Study) -> int:
        """Store a study; return its id."""
        return self._store.add_study(study)

    def update_study(self, study_id: int, *, status: str | None = None, result: dict | None = None,
                     note: str | None = None, label: str | None = None, owner: str | None = None) -> None:
        """Change a stored study's status (ending it unless running), result, note, label or owner."""
        self._store.update_study(study_id, status=status, result=result, note=note, label=label, owner=owner)

    def delete_study(self, study_id: int) -> None:
        """Delete a study and its runs."""
        self._store.delete_study(study_id)

    def job(self) -> JobState | None:
        """Return the current (or last) job's state."""
        return self._jobs.state

    def job_running(self) -> bool:
        """Return True while a job runs."""
        return self._jobs.running

    def start_job(self, job: Job) -> None:
        """Run a job in the background (RuntimeError when one runs already)."""
        self._jobs.start(job)

    def cancel_job(self, wait_s: float = 0.0) -> None:
        """Ask the running job to stop after its current window; optionally wait for it."""
        self._jobs.cancel(wait_s)

    def wait_job(self, timeout_s: float | None = None) -> bool:
        """Wait until the job ends; return True when it has."""
        return self._jobs.wait(timeout_s)
