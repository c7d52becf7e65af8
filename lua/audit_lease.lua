-- audit_lease: take, or renew, the store's export lease: one exporter's
-- pass at a time, whatever the number of processes that run one.
--
-- KEYS[1] lease  <prefix>:lease:audit  STRING  the holder of the lease, until it expires
--
-- ARGV[1] holder  string  the exporter asking
-- ARGV[2] ttl_ms  int     > 0: how long it holds the lease from now
--
-- RETRY safe    the holder renews its own lease
--
-- RETURNS
--   {"OK"}
--     the holder has the lease for ttl_ms
--   {"HELD"}
--     another exporter holds it

local h = redis.call('GET', KEYS[1])
if h and h ~= ARGV[1] then
  return {'HELD'}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'OK'}
