"""The Lua scripts behind the intake queue: each decision's checks and writes in one step."""

from __future__ import annotations

from arq.constants import in_progress_key_prefix, job_key_prefix
from redis.asyncio import Redis

# In every script that records a delivery, the last KEY is the body key (`P body:{sha256}`,
# or '' when there is no body to compare) and the last ARGV the delivery id. The same signed
# body under another delivery id is a replay and is not acted on; GitHub's own redeliveries
# keep the id, so they pass this check and meet the delivery key's instead.
_REPLAY = """
local body_key = KEYS[#KEYS]
local delivery_id = ARGV[#ARGV]
if body_key ~= '' then
  local first = redis.call('GET', body_key)
  if first and first ~= delivery_id then
    return {'duplicate', 'replay_of:' .. first}
  end
end
local function record_body(ttl)
  if body_key ~= '' then redis.call('SET', body_key, delivery_id, 'EX', ttl) end
end
"""


def _claim(ttl_arg: int) -> str:
    """The replay check, then the delivery claimed (the delivery key set to "pending" unless
    it exists: a duplicate) and the body recorded, both kept ARGV[ttl_arg] seconds."""
    return (
        _REPLAY
        + f"""
if not redis.call('SET', KEYS[1], 'pending', 'NX', 'EX', ARGV[{ttl_arg}]) then
  return {{'duplicate', redis.call('GET', KEYS[1]) or ''}}
end
record_body(ARGV[{ttl_arg}])
"""
    )


_STALE_CHECK = """
local function alive(job_id)
  return redis.call('EXISTS', ARGV[1] .. job_id, ARGV[2] .. job_id) > 0
end
"""

# KEYS: delivery, run, waiting, new job key, queue, body
# ARGV: job prefix, in-progress prefix, delivery ttl, run ttl, run_id, job_id, job bytes,
#       score ms, job expiry ms, waiting entry json ('' : a refusal does not wait), delivery_id,
#       labeller, delivery_id
RUN_SCRIPT = (
    _claim(3)
    + _STALE_CHECK
    + """
local current = redis.call('HGET', KEYS[2], 'job_id')
if current then
  if alive(current) then
    if ARGV[10] ~= '' then
      redis.call('RPUSH', KEYS[3], ARGV[10])
      redis.call('EXPIRE', KEYS[3], ARGV[4])
    end
    redis.call('SET', KEYS[1], 'already_running:' .. current, 'KEEPTTL')
    return {'already_running', current, redis.call('HGET', KEYS[2], 'run_id') or ''}
  end
  redis.call('DEL', KEYS[2], KEYS[3])
end
redis.call('HSET', KEYS[2], 'run_id', ARGV[5], 'job_id', ARGV[6], 'delivery_id', ARGV[11],
           'labeller', ARGV[12], 'queued_at', ARGV[8])
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('PSETEX', KEYS[4], ARGV[9], ARGV[7])
redis.call('ZADD', KEYS[5], ARGV[8], ARGV[6])
redis.call('SET', KEYS[1], 'queued:' .. ARGV[6], 'KEEPTTL')
return {'queued', ARGV[6], ARGV[5]}
"""
)

# KEYS: delivery, run, abort set, body
# ARGV: job prefix, in-progress prefix, delivery ttl, cancel key prefix, reason, cancel ttl,
#       now ms, delivery_id
CANCEL_SCRIPT = (
    _claim(3)
    + _STALE_CHECK
    + """
local current = redis.call('HGET', KEYS[2], 'job_id')
if not current or not alive(current) then
  redis.call('SET', KEYS[1], 'nothing_to_cancel', 'KEEPTTL')
  return {'nothing_to_cancel', '', ''}
end
local run_id = redis.call('HGET', KEYS[2], 'run_id')
redis.call('SET', ARGV[4] .. run_id, ARGV[5], 'EX', ARGV[6])
redis.call('HSET', KEYS[2], 'cancelled', ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[7], current)
redis.call('SET', KEYS[1], 'cancelled:' .. current, 'KEEPTTL')
return {'cancelled', current, run_id}
"""
)

# KEYS: delivery, job key, queue, body
# ARGV: delivery ttl, job_id, job bytes, score ms, job expiry ms, result key, delivery_id
JOB_SCRIPT = (
    _claim(1)
    + """
if redis.call('EXISTS', KEYS[2], ARGV[6]) > 0 then
  redis.call('SET', KEYS[1], 'duplicate_job:' .. ARGV[2], 'KEEPTTL')
  return {'duplicate', 'duplicate_job:' .. ARGV[2]}
end
redis.call('PSETEX', KEYS[2], ARGV[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[2])
redis.call('SET', KEYS[1], 'queued:' .. ARGV[2], 'KEEPTTL')
return {'queued', ARGV[2]}
"""
)

# KEYS: run, waiting, cancel key
# ARGV: run_id
FINISH_SCRIPT = """
local waiting = {}
if redis.call('HGET', KEYS[1], 'run_id') == ARGV[1] then
  waiting = redis.call('LRANGE', KEYS[2], 0, -1)
  redis.call('DEL', KEYS[1], KEYS[2])
end
redis.call('DEL', KEYS[3])
return waiting
"""

# KEYS: run, waiting; ARGV: run_id
TAKE_WAITING_SCRIPT = """
if redis.call('HGET', KEYS[1], 'run_id') ~= ARGV[1] then
  return {}
end
local waiting = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[2])
return waiting
"""

# KEYS: lock; ARGV: job prefix, in-progress prefix, job_id, ttl seconds. Returns '' when the
# job holds the lock now, else the job id holding it (a holder whose arq job is gone is stale).
PULL_CLAIM_SCRIPT = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[3]
   and redis.call('EXISTS', ARGV[1] .. current, ARGV[2] .. current) > 0 then
  return current
end
redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4])
return ''
"""

# KEYS: lock; ARGV: job_id
PULL_RELEASE_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


class PullLock:
    """One follow-up at a time per pull request: `P followup:{repo_id}:{pull}` holds the arq
    job id of the follow-up running on it (EX `ttl`, a backstop)."""

    def __init__(self, redis: Redis, key_prefix: str, ttl: int) -> None:
        self.key_prefix, self.ttl = key_prefix, ttl
        self._claim = redis.register_script(PULL_CLAIM_SCRIPT)
        self._release = redis.register_script(PULL_RELEASE_SCRIPT)

    def key(self, repo_id: int, pull: int) -> str:
        return f"{self.key_prefix}followup:{repo_id}:{pull}"

    async def claim(self, repo_id: int, pull: int, job_id: str) -> str | None:
        """None when `job_id` now holds the pull request, else the job id of the one that does."""
        args: list[str | int] = [job_key_prefix, in_progress_key_prefix, job_id, self.ttl]
        holder = await self._claim(keys=[self.key(repo_id, pull)], args=args)
        text = holder.decode() if isinstance(holder, bytes) else str(holder)
        return text or None

    async def release(self, repo_id: int, pull: int, job_id: str) -> None:
        """Free the pull request if `job_id` holds it."""
        await self._release(keys=[self.key(repo_id, pull)], args=[job_id])
