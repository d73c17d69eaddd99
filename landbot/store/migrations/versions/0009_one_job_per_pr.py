"""One job of a pull request in flight at a time, and comments claimed before they are
posted (issue 29, point 6).

`jobs.repo` (lower-cased) and `jobs.pr` name the pull request a job acts on (None: a job of
no pull request, such as a settings file re-read): the lease hands out no job of a pull
request while another job of it is leased and unexpired. `comment_posts` holds one row per
comment landbot makes once (the status comment of a PR, the hand-back of a drop, a fix
announcement): claimed ("posting") before the POST, its id kept ("posted") when it is made,
so a later writer edits it, and a writer that finds a claim without an id looks for the
comment by its marker and tag before posting again.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("repo", sa.String(200)))
        batch.add_column(sa.Column("pr", sa.Integer))
    op.create_index("ix_jobs_pr", "jobs", ["repo", "pr", "status"])
    conn = op.get_bind()
    jobs = sa.table(
        "jobs",
        sa.column("id", sa.Integer),
        sa.column("drop_id", sa.Integer),
        sa.column("payload", sa.JSON),
        sa.column("status", sa.String),
        sa.column("repo", sa.String),
        sa.column("pr", sa.Integer),
    )
    drops = sa.table(
        "drops", sa.column("id", sa.Integer), sa.column("repo", sa.String), sa.column("pr")
    )
    # Only the open jobs matter to the lease: the others are history.
    open_ = conn.execute(
        sa.select(jobs.c.id, jobs.c.drop_id, jobs.c.payload).where(
            jobs.c.status.in_(("queued", "leased"))
        )
    ).all()
    for row in open_:
        repo: object = None
        pr: object = None
        if row.drop_id is not None:
            found = conn.execute(
                sa.select(drops.c.repo, drops.c.pr).where(drops.c.id == row.drop_id)
            ).first()
            if found is not None:
                repo, pr = found.repo, found.pr
        elif isinstance(row.payload, dict):
            repo, pr = row.payload.get("repo"), row.payload.get("pr")
        if isinstance(repo, str) and isinstance(pr, int):
            conn.execute(jobs.update().where(jobs.c.id == row.id).values(repo=repo.lower(), pr=pr))
    op.create_table(
        "comment_posts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(300), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("pr", sa.Integer, nullable=False),
        sa.Column("marker", sa.String(100), nullable=False),
        sa.Column("drop_id", sa.Integer),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("owner", sa.String(200)),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("node_id", sa.String(100)),
        sa.Column("url", sa.Text),
        sa.Column("claimed_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index("ix_comment_posts_repo_pr", "comment_posts", ["repo", "pr"])


def downgrade() -> None:
    op.drop_index("ix_comment_posts_repo_pr", "comment_posts")
    op.drop_table("comment_posts")
    op.drop_index("ix_jobs_pr", "jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("pr")
        batch.drop_column("repo")
