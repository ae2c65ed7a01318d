DROP TABLE maintenance_markers;
