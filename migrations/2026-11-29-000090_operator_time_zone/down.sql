ALTER TABLE operators DROP COLUMN time_zone;
