package com.example.notes;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/** Where notes live. */
public class NoteStore {
    public Connection connection() throws SQLException {
        return DriverManager.getConnection("jdbc:h2:mem:notes");
    }

    /** Notes with a tag: the tag is glued into the query. */
    public ResultSet byTag(Statement st, String tag) throws SQLException {
        return st.executeQuery("SELECT id FROM notes WHERE tag = '" + tag + "'");
    }

    /** Records an event: its callers pass fixed event names. */
    public void audit(Statement st, String event) throws SQLException {
        st.executeUpdate("INSERT INTO audit(event) VALUES ('" + event + "')");
    }
}
